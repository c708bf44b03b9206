"""Nothing CI cannot reach: every module imports, every evaluation script and example runs.

Code that nothing runs rots (issue 30: the scenarios' runner and two evaluation scripts imported
modules a redesign had moved, and nothing noticed). So:

* every module of ``runner``, ``bot``, ``action``, ``examples``, ``testkit`` and ``evaluation`` is
  imported,
  in a fresh interpreter (``__main__`` modules are parsed and the names they import looked up,
  since importing one runs it);
* every evaluation script and runnable example runs with its ``--smoke`` setting (toy sizes,
  seconds, CPU), each in its own process with a time limit, two at a time — or is named in
  :data:`COVERED_ELSEWHERE` with the test that runs it;
* a new script that is in neither table fails :func:`test_every_script_is_run_somewhere`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# -- every module imports ---------------------------------------------------------------------------

def _package_modules(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


#: Modules only their own host may import, and the tests that run them there.
RUN_BY_OTHERS = {
    "bot.migrations.env": "Alembic's environment script (reads alembic.context.config): tests/history/test_migrations.py",
}

#: Files imported by path, with the folders their own imports need first on ``sys.path``.
FILE_MODULES = [
    *[(p, [ROOT / "evaluation"]) for p in sorted((ROOT / "evaluation").glob("*.py"))],
    (ROOT / "examples/target/benchmarks/bench_ops.py", [ROOT / "examples/target/src"]),
    (ROOT / "examples/demo/head/src/tinyops/ops.py", []),
]

_IMPORT_ALL = textwrap.dedent('''
    import ast, importlib, importlib.util, json, sys, traceback
    modules, files = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    failed = {}

    def check_main(name, path):
        # a __main__ module runs when imported: import what it imports instead
        tree = ast.parse(open(path, encoding="utf-8").read())
        package = name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                mod = importlib.import_module(target)
                for alias in node.names:
                    if not hasattr(mod, alias.name):
                        importlib.import_module(f"{target}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)

    for name, path in modules:
        try:
            if name.endswith(".__main__"):
                check_main(name, path)
            else:
                importlib.import_module(name)
        except BaseException:
            failed[name] = traceback.format_exc(limit=3)[-1500:]
    for i, (path, extra) in enumerate(files):
        saved = list(sys.path)
        sys.path[:0] = extra
        try:
            spec = importlib.util.spec_from_file_location(f"_reach_{i}", path)
            module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
            spec.loader.exec_module(module)
        except BaseException:
            failed[path] = traceback.format_exc(limit=3)[-1500:]
        finally:
            sys.path[:] = saved
    print(json.dumps(failed))
''')


def test_every_module_imports():
    packages = ("runner", "bot", "action", "examples", "testkit")
    modules = [(m, str(ROOT / (m.replace(".", "/") + ".py")) if (ROOT / (m.replace(".", "/") + ".py")).exists()
                else str(ROOT / m.replace(".", "/") / "__init__.py"))
               for package in packages for m in _package_modules(package)]
    modules = [(m, p) for m, p in modules if m not in RUN_BY_OTHERS and not m.startswith(("examples.target", "examples.demo"))]
    files = [(str(p), [str(e) for e in extra]) for p, extra in FILE_MODULES]
    assert len(modules) > 100 and len(files) > 15
    proc = subprocess.run([sys.executable, "-c", _IMPORT_ALL, json.dumps(modules), json.dumps(files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failed == {}, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


# -- every script runs --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Smoke:
    """One script's smoke run: ``python ARGV`` from the repository root. ``needs``: it
    starts PostgreSQL and Redis from the system packages (skipped, naming what is missing, when
    they are not installed); ``timeout`` in seconds."""

    argv: tuple[str, ...]
    needs: bool = False
    timeout: float = 300.0


SMOKES = {
    "evaluation/bisect_culprits.py": Smoke(("evaluation/bisect_culprits.py", "--smoke")),
    "evaluation/bot_load.py": Smoke(("evaluation/bot_load.py", "--smoke"), needs=True),
    "evaluation/changepoints.py": Smoke(("evaluation/changepoints.py", "--smoke")),
    "evaluation/conditions.py": Smoke(("evaluation/conditions.py", "--smoke")),
    "evaluation/interval_coverage.py": Smoke(("evaluation/interval_coverage.py", "--smoke")),
    "evaluation/intent.py": Smoke(("evaluation/intent.py", "--smoke")),
    "evaluation/intent_real.py": Smoke(("evaluation/intent_real.py", "--smoke")),
    "evaluation/intent_precision.py": Smoke(("evaluation/intent_precision.py", "--smoke")),
    "evaluation/claim_checks.py": Smoke(("evaluation/claim_checks.py", "--smoke")),
    "evaluation/outputs.py": Smoke(("evaluation/outputs.py", "--smoke")),
    "evaluation/isolation.py": Smoke(("evaluation/isolation.py", "--smoke")),
    "evaluation/pair_estimators.py": Smoke(("evaluation/pair_estimators.py", "--smoke")),
    "evaluation/peers.py": Smoke(("evaluation/peers.py", "--smoke")),
    "evaluation/real_conventions.py": Smoke(("evaluation/real_conventions.py", "--smoke")),
    "evaluation/relabel_intent.py": Smoke(("evaluation/relabel_intent.py", "--smoke")),
    "evaluation/real_suites.py": Smoke(("evaluation/real_suites.py", "--smoke")),
    "evaluation/sample_time.py": Smoke(("evaluation/sample_time.py", "--smoke")),
    "evaluation/selection.py": Smoke(("evaluation/selection.py", "--smoke")),
    "evaluation/sweeps.py": Smoke(("evaluation/sweeps.py", "--smoke")),
    "evaluation/train_intent_model.py": Smoke(("evaluation/train_intent_model.py", "--smoke")),
    "evaluation/webhook_load.py": Smoke(("evaluation/webhook_load.py", "--smoke")),
    "examples/scenarios/run.py": Smoke(("-m", "examples.scenarios.run", "--smoke")),
}

#: Scripts another test runs end to end (at a smoke size), and that test.
COVERED_ELSEWHERE = {
    "evaluation/real_prs.py": "tests/runner/test_real_prs.py",
    "evaluation/identical_code.py": "tests/runner/test_identical_code.py",
    "evaluation/sensitivity.py": "tests/runner/test_sensitivity_smoke.py",
    "evaluation/sandbox_limits.py": "tests/evaluation/test_sandbox_limits_smoke.py",
    "evaluation/harvest_prs.py": "tests/intent/test_harvest.py",
    "evaluation/claims.py": "tests/intent/test_claims.py",
    "evaluation/gpu_acceptance.py": "tests/runner/test_gpu_acceptance.py",
    "evaluation/ingest_cost.py": "tests/app/test_ingest.py",
    "evaluation/measures.py": "tests/runner/test_measures.py",
    "evaluation/static_kernels_hand.py": "tests/evaluation/test_static_kernels_smoke.py",
    "evaluation/static_kernels.py": "tests/evaluation/test_static_kernels_smoke.py",
    "evaluation/static_kernels_same_spec.py": "tests/evaluation/test_static_kernels_smoke.py",
    "evaluation/static_kernels_captured.py": "tests/evaluation/test_static_kernels_smoke.py",
    "evaluation/static_kernels/launch.py": "tests/evaluation/test_static_kernels_smoke.py",
}


def _scripts() -> list[str]:
    """Every file of evaluation/ and examples/ that runs as a program (``__main__`` guard)."""
    out = []
    for folder in ("evaluation", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if '__name__ == "__main__"' in path.read_text(encoding="utf-8"):
                out.append(path.relative_to(ROOT).as_posix())
    return out


def test_every_script_is_run_somewhere():
    scripts = _scripts()
    assert "evaluation/peers.py" in scripts and "examples/scenarios/run.py" in scripts
    missing = [s for s in scripts if s not in SMOKES and s not in COVERED_ELSEWHERE]
    assert missing == [], f"give these a --smoke and a row in SMOKES: {missing}"
    assert sorted(set(SMOKES) | set(COVERED_ELSEWHERE)) == sorted(scripts)  # no stale rows either
    for script, test in COVERED_ELSEWHERE.items():
        assert Path(script).stem in (ROOT / test).read_text(encoding="utf-8"), (script, test)
    for script, smoke in SMOKES.items():
        assert "--smoke" in (ROOT / script).read_text(encoding="utf-8"), script


#: Smoke runs at once (CI has 2 cores; each run is mostly one busy process).
PARALLEL = 2


class SmokeRunner:
    """Starts the selected smoke runs in the background, :data:`PARALLEL` at a time, on first
    use; :meth:`result` waits for one."""

    def __init__(self, names: list[str]):
        self.names = names
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=PARALLEL)

    def _run(self, name: str) -> subprocess.CompletedProcess | str:
        smoke = SMOKES[name]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        try:
            return subprocess.run([sys.executable, *smoke.argv], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=smoke.timeout)
        except subprocess.TimeoutExpired as exc:
            return f"timed out after {smoke.timeout:g} s; output so far:\n{(exc.stdout or b'')[-3000:]!r}"

    def result(self, name: str):
        with self._lock:
            if not self._futures:
                for n in [name] + [n for n in self.names if n != name]:
                    self._futures[n] = self._pool.submit(self._run, n)
            elif name not in self._futures:
                self._futures[name] = self._pool.submit(self._run, name)
        return self._futures[name].result()

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)


def _missing_programs(smoke: Smoke) -> list[str]:
    if not smoke.needs:
        return []
    from testkit.services import missing_programs

    return missing_programs()


@pytest.fixture(scope="module")
def smoke_runner(request):
    selected = [item.callspec.params["script"] for item in request.session.items
                if item.originalname == "test_script_runs_with_its_smoke_setting" and hasattr(item, "callspec")]
    runnable = [s for s in selected if not _missing_programs(SMOKES[s])]
    runner = SmokeRunner(runnable)
    yield runner
    runner.close()


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKES))
def test_script_runs_with_its_smoke_setting(script, smoke_runner):
    missing = _missing_programs(SMOKES[script])
    if missing:
        pytest.skip(f"{script} --smoke needs {', '.join(missing)} (not installed)")
    proc = smoke_runner.result(script)
    assert not isinstance(proc, str), f"{script}: {proc}"
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip(), f"{script} printed nothing"
