"""Real public benchmark suites run as they are: an asv suite and a pytest-benchmark suite,
taken from their projects' source distributions on the package index.

A benchmark, not a test (it downloads and installs): for each project it downloads the sdist,
makes it a git repository, and runs the real ``perfgate run`` on it with the suite's own
convention (``suite`` in a ``--config`` file) and an ``install`` command (``pip install .`` and the
suite's test plugins in the side's venv), then prints what was listed, measured, skipped and failed, with the first
failure reasons.

- xarray (asv: ``asv_bench/asv.conf.json``, pure Python; numpy and pandas from the index);
- pydantic (pytest-benchmark: ``tests/benchmarks``; pydantic-core from the index).

Usage::

    python evaluation/real_suites.py [--filter-xarray '*Indexing*'] [--max-time 120]
    python evaluation/real_suites.py --smoke     # the tests' fixture suites, nothing downloaded (CI)

The last line: ``xarray_listed=.. xarray_measured=.. xarray_skipped=.. xarray_failed=..
pydantic_listed=.. ...``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

from harness import ROOT, perfgate  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import commit, git  # noqa: E402

PROJECTS = {
    # name: (requirement, suite, benchmarks dir inside the sdist, default filter, install command)
    "xarray": ("xarray==2026.9.0", "asv", "asv_bench/benchmarks", "*Indexing*", "pip install -q ."),
    # The test plugins pydantic's conftest.py needs (its `dev` group, without the timing plugins
    # pytest-benchmark and pytest-codspeed, whose fixture perfgate provides).
    "pydantic": ("pydantic==2.14.4", "pytest-benchmark", "tests/benchmarks", "*test_attribute_access*",
                 "pip install -q . dirty-equals pytest-mock pytest-run-parallel pytz faker jsonschema time-machine"),
}


#: The smoke's stand-ins: the test suites' own fixtures of each convention, nothing downloaded or installed.
SMOKE_PROJECTS = {
    "asv_example": ("tests/fixtures/suites/asv_example", "asv", "benchmarks", "*", ""),
    "pytest_benchmark_example": ("tests/fixtures/suites/pytest_benchmark_example", "pytest-benchmark", "benchmarks",
                                 "*", ""),
}


def copy_fixture(folder: str, into: Path) -> Path:
    """The suite at ``ROOT/folder`` copied under ``into`` as a one-commit git repository."""
    repo = into / Path(folder).name
    shutil.copytree(ROOT / folder, repo)
    git(repo, "init", "-q")
    commit(repo, {}, "fixture")
    return repo


def fetch(requirement: str, into: Path) -> Path:
    """The sdist of ``requirement`` unpacked under ``into`` as a one-commit git repository."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    requirement, "-d", str(into)], check=True, capture_output=True)
    (archive,) = into.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (repo,) = [p for p in into.iterdir() if p.is_dir()]
    git(repo, "init", "-q")
    commit(repo, {}, "sdist")
    return repo


def run(repo: Path, suite: str, benchmarks: str, pattern: str, install: str, max_time: float, out: Path) -> dict:
    """``perfgate run`` on ``repo``; the results document."""
    config = out.parent / f"{out.name}.toml"
    config.write_text(f'suite = "{suite}"\nbenchmarks = "{benchmarks}"\ninstall = "{install}"\n'
                      f"max_time = {max_time}\n")
    outcome = perfgate("run", "--repo", str(repo), "--config", str(config), "--filter", pattern,
                       out=out)
    print(outcome.stdout[-3000:], outcome.stderr[-2000:], sep="\n")
    if outcome.doc is None:
        return {"error": (outcome.stderr.strip().splitlines() or ["no results"])[-1]}
    return outcome.doc


def summarize(doc: dict) -> dict:
    """``{listed, measured, skipped, failed, reasons}`` of a run document."""
    if "error" in doc:
        return {"listed": 0, "measured": 0, "skipped": 0, "failed": 0, "reasons": [doc["error"]]}
    benchmarks = doc.get("benchmarks") or []
    failed = [b for b in benchmarks if (b.get("head") or {}).get("error")]
    skipped = (doc.get("settings") or {}).get("skipped") or []
    reasons = Counter(((b["head"]["error"] or "").strip().splitlines() or [""])[-1][:120] for b in failed)
    return {"listed": len(benchmarks) + len(skipped), "measured": len(benchmarks) - len(failed),
            "skipped": len(skipped), "failed": len(failed),
            "reasons": [f"{n}× {r}" for r, n in reasons.most_common(5)]
            + [f"skipped: {s.get('reason')}" for s in skipped[:3]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-time", type=float, default=120.0)
    parser.add_argument("--only", choices=sorted(PROJECTS), help="one project")
    for name, (_, _, _, pattern, _) in PROJECTS.items():
        parser.add_argument(f"--filter-{name}", default=pattern)
    parser.add_argument("--smoke", action="store_true",
                        help="the tests' fixture suites instead of the downloads, nothing installed, 6 s each (CI)")
    args = parser.parse_args(argv)
    projects = SMOKE_PROJECTS if args.smoke else PROJECTS
    if args.smoke:
        args.max_time, args.only = 6.0, None
    figures = []
    with tempfile.TemporaryDirectory(prefix="perfgate-real-suites-") as tmp:
        for name, (requirement, suite, benchmarks, default_pattern, install) in projects.items():
            if args.only and name != args.only:
                continue
            print(f"== {name} ({suite}, {requirement})", flush=True)
            (Path(tmp) / name).mkdir()
            repo = copy_fixture(requirement, Path(tmp) / name) if args.smoke else fetch(requirement, Path(tmp) / name)
            pattern = getattr(args, f"filter_{name}", default_pattern)
            summary = summarize(run(repo, suite, benchmarks, pattern, install, args.max_time, Path(tmp) / f"{name}-out"))
            print(f"{name}: filter {pattern!r}: listed {summary['listed']}, measured {summary['measured']}, "
                  f"skipped {summary['skipped']}, failed {summary['failed']}")
            for reason in summary["reasons"]:
                print(f"   {reason}")
            figures += [f"{name}_{k}={summary[k]}" for k in ("listed", "measured", "skipped", "failed")]
    print(" ".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
