"""The pytest-benchmark convention: suites as they are, measured with perfgate's sampler.

Detection (parent side): the benchmark directory has no ``bench_*.py`` file but test files
(``test_*.py``, ``*_test.py``) whose tests take the ``benchmark`` fixture.

pytest itself collects and runs the tests (fixtures, ``parametrize``, marks, ``conftest.py`` all
work because it is pytest doing it), in the worker, with one plugin of ours:

- listing: ``pytest --collect-only`` keeps the tests that request the ``benchmark`` fixture; the
  benchmark names are their node ids (relative to the revision's root, e.g.
  ``benchmarks/test_ops.py::test_add[float32]``), the family the node id without its parameters,
  the params ``parametrize``'s values (:func:`runner.conventions.base.param_label`);
- set-up: the one test runs once with our ``benchmark`` fixture in place of pytest-benchmark's
  (which is blocked when installed, its command-line options kept so a suite's ``addopts`` still
  parse). ``benchmark(fn, *args, **kwargs)`` and ``benchmark.pedantic(fn, args=, kwargs=,
  setup=, ...)`` call ``fn`` once (the test gets its result, as with pytest-benchmark) and capture
  it with its arguments; perfgate then times ``fn(*args, **kwargs)`` with its sampler. ``rounds``,
  ``iterations`` and ``warmup_rounds`` are ignored (perfgate's sampler owns them); a ``setup``
  given to ``pedantic`` runs once, its ``(args, kwargs)`` reused for every timed call.

The callable is timed after the test has returned, so after its fixtures' teardown: a callable
that needs a resource a fixture closes on teardown does not work here. A test that pytest skips
(``skip``, ``skipif``, ``importorskip``, ``xfail``) is reported as skipped, not failed.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Callable

from .base import Prepared, Skipped, Suite, listing, param_label, python_files, read_text

#: The entry-point name of pytest-benchmark's plugin (blocked: our fixture replaces its fixture).
_PLUGIN = "benchmark"


class BenchmarkCapture:
    """The ``benchmark`` fixture perfgate gives a test: records what the test hands to it.

    Attributes:
        target: ``(fn, args, kwargs)`` after the test called it, else None.
        extra_info: a dict the test may fill (pytest-benchmark's; kept, not reported).
    """

    def __init__(self):
        self.target: tuple[Callable, tuple, dict] | None = None
        self.extra_info: dict = {}
        self.group = None

    def __call__(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """Capture ``fn(*args, **kwargs)`` and return its result (one call).

        Raises:
            RuntimeError: the test uses the fixture twice (pytest-benchmark refuses that too).
        """
        self._capture(fn, args, kwargs)
        return fn(*args, **kwargs)

    def pedantic(self, target: Callable, args: tuple = (), kwargs: dict | None = None,
                 setup: Callable | None = None, rounds: int = 1, warmup_rounds: int = 0,
                 iterations: int = 1) -> Any:
        """pytest-benchmark's ``pedantic``: ``setup()`` (once; it may return ``(args, kwargs)``)
        then capture ``target(*args, **kwargs)`` and return its result. ``rounds``,
        ``warmup_rounds`` and ``iterations`` belong to perfgate's sampler and are ignored."""
        if setup is not None:
            made = setup()
            if made is not None:
                args, kwargs = made
        kwargs = dict(kwargs or {})
        self._capture(target, tuple(args), kwargs)
        return target(*args, **kwargs)

    def _capture(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        if self.target is not None:
            raise RuntimeError("the benchmark fixture can be used only once per test")
        if not callable(fn):
            raise TypeError(f"benchmark(...) needs a callable, got {type(fn).__name__}")
        self.target = (fn, args, kwargs)


class _Plugin:
    """Our pytest plugin: the ``benchmark`` fixture, pytest-benchmark's options and marker, and a
    record of what was collected and how the test went."""

    def __init__(self):
        self.items: list = []
        self.collect_errors: list = []
        self.reports: list = []
        self.capture = BenchmarkCapture()

    def pytest_addoption(self, parser) -> None:
        try:  # a suite's addopts may carry --benchmark-* options: keep them parseable
            from pytest_benchmark.plugin import pytest_addoption as benchmark_options
        except Exception:  # noqa: BLE001 - not installed: nothing to keep
            return
        benchmark_options(parser)

    def pytest_configure(self, config) -> None:
        config.addinivalue_line("markers", "benchmark(**kwargs): pytest-benchmark options (ignored by perfgate)")

    def pytest_collection_modifyitems(self, items) -> None:
        self.items = [item for item in items if "benchmark" in getattr(item, "fixturenames", ())]

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collect_errors.append(report)

    def pytest_runtest_logreport(self, report) -> None:
        self.reports.append(report)


def _plugin() -> _Plugin:
    import pytest

    class Plugin(_Plugin):
        # pytest finds fixtures on a registered plugin's class (pytest is imported only here)
        @pytest.fixture(name="benchmark")
        def benchmark_fixture(self) -> BenchmarkCapture:
            return self.capture

    return Plugin()


def rootdir(directory: Path, cwd: Path) -> Path:
    """Where node ids are relative to: the revision's root (the worker's working directory) when
    the benchmark directory is inside it, else the directory itself — never a folder above the
    revision, whose path would differ between the sides."""
    directory, cwd = directory.resolve(), cwd.resolve()
    return cwd if directory.is_relative_to(cwd) else directory


def _args(root: Path) -> list[str]:
    return ["-p", "no:cacheprovider", "-p", f"no:{_PLUGIN}", "--rootdir", str(root), "--confcutdir", str(root),
            "-q", "-s"]


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(str(text).rstrip().splitlines()[-lines:])


def _main(args: list[str], plugin: _Plugin) -> int:
    try:
        import pytest
    except ImportError:
        raise RuntimeError("pytest is not installed in the benchmark environment "
                           "(a pytest-benchmark suite needs it: add it to `install`)") from None
    return int(pytest.main(args, plugins=[plugin]))


def collect(directory: str | Path) -> dict:
    """List the tests under ``directory`` that use the ``benchmark`` fixture (worker side).

    Returns:
        ``{benchmarks, errors, skipped}``: benchmarks ``{name, file, func, params, suite, family}``
        with the node id as ``name`` and ``func``, ``params`` the labels of ``parametrize``'s values,
        ``file`` relative to ``directory``; errors ``{file, error}`` for files pytest could not
        collect; skipped is empty (a skip shows at set-up).
    """
    directory = Path(directory).resolve()
    root = rootdir(directory, Path.cwd())
    plugin = _plugin()
    try:
        code = _main([str(directory), "--collect-only", *_args(root)], plugin)
    except RuntimeError as exc:
        return listing(errors=[{"file": ".", "error": str(exc)}])
    cases = []
    for item in plugin.items:
        path = Path(item.path).resolve()
        rel = path.relative_to(directory).as_posix() if path.is_relative_to(directory) else path.name
        cases.append({"name": item.nodeid, "file": rel, "func": item.nodeid, "params": _params(item),
                      "suite": "pytest-benchmark", "family": item.nodeid.split("[", 1)[0]})
    errors = [{"file": _report_file(r.nodeid, directory, root), "error": _tail(r.longreprtext)}
              for r in plugin.collect_errors]
    if code not in (0, 1, 2, 5) and not errors:  # 3: internal error, 4: usage error (bad addopts)
        errors.append({"file": ".", "error": f"pytest --collect-only exited with status {code} (see the worker log)"})
    return listing(cases, errors)


def _params(item) -> dict[str, str]:
    """The labels of a test's ``parametrize`` values (``{}`` for a test without)."""
    callspec = getattr(item, "callspec", None)
    values = getattr(callspec, "params", None) or {}
    return {str(k): param_label(v) for k, v in values.items()}


def _report_file(nodeid: str, directory: Path, root: Path) -> str:
    path = (root / nodeid.split("::", 1)[0]).resolve()
    return path.relative_to(directory).as_posix() if path.is_relative_to(directory) else nodeid or "."


def prepare(directory: str | Path, nodeid: str) -> Prepared:
    """Run the test ``nodeid`` once under pytest with perfgate's ``benchmark`` fixture and return
    what it handed to the fixture, as the callable to time (worker side).

    Raises:
        LookupError: pytest finds no such test on this revision.
        Skipped: pytest skipped the test (or it xfailed).
        RuntimeError: the test failed (pytest's report, last lines), or never used the fixture.
    """
    directory = Path(directory).resolve()
    root = rootdir(directory, Path.cwd())
    plugin = _plugin()
    path, sep, rest = nodeid.partition("::")
    code = _main([str(root / path) + sep + rest, *_args(root)], plugin)
    if not plugin.reports:
        raise LookupError(f"{nodeid} is not a test on this revision (pytest exited with status {code})")
    for report in plugin.reports:
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else _tail(report.longreprtext, 1)
            raise Skipped(f"{nodeid}: {str(reason).removeprefix('Skipped: ')}")
        if report.failed:
            raise RuntimeError(f"{nodeid} failed ({report.when}):\n{_tail(report.longreprtext)}")
    if plugin.capture.target is None:
        raise RuntimeError(f"{nodeid} never called benchmark(...) or benchmark.pedantic(...)")
    fn, args, kwargs = plugin.capture.target
    return Prepared(functools.partial(fn, *args, **kwargs))


#: A test function taking the ``benchmark`` fixture (pytest-benchmark), in a test file's text.
_USES_BENCHMARK = re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\([^)]*\bbenchmark\b", re.M)


def uses_pytest_benchmark(directory: Path) -> bool:
    """True when ``directory`` has no ``bench_*.py`` file and a test file (``test_*.py``,
    ``*_test.py``) whose test takes the ``benchmark`` fixture."""
    if not directory.is_dir() or python_files(directory, "bench_*.py"):
        return False
    for path in sorted({*python_files(directory, "test_*.py"), *python_files(directory, "*_test.py")}):
        if _USES_BENCHMARK.search(read_text(path)):
            return True
    return False


class PytestBenchmarkConvention:
    """pytest-benchmark suites (see the module docstring)."""

    name = "pytest-benchmark"
    looked_for = "tests that use the benchmark fixture"
    options: tuple[str, ...] = ()

    def detect(self, root: Path, benchmarks: str, cfg: Any) -> Suite | None:
        """The configured directory when it holds pytest-benchmark tests (:func:`uses_pytest_benchmark`)."""
        return Suite(self.name, benchmarks) if uses_pytest_benchmark(root / benchmarks) else None

    def collect(self, directory: Path, options: dict) -> dict:
        """The tests under ``directory`` that use the fixture (:func:`collect`)."""
        return collect(directory)

    def prepare(self, case: dict, device: str, options: dict) -> Prepared:
        """:func:`prepare` of the case's node id."""
        return prepare(case["dir"], case["func"])


CONVENTION = PytestBenchmarkConvention()
