"""Which benchmark convention a revision uses, and where its benchmarks are (config key ``suite``).

``auto`` (the default) picks, in this order: **asv** when an ``asv.conf.json`` is found (at the
root, in the configured ``benchmarks`` directory, or one directory down — numpy and pandas keep
it in ``benchmarks/`` and ``asv_bench/``), with its ``benchmark_dir`` (default ``benchmarks``,
relative to the file, as asv reads it); **pytest-benchmark** when the benchmark directory has no
``bench_*.py`` file but test files whose tests take the ``benchmark`` fixture; else perfgate's
own ``bench_*`` files. The worker does the listing itself (:mod:`runner.worker.discovery`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

#: A test function taking the ``benchmark`` fixture (pytest-benchmark), in a test file's text.
_USES_BENCHMARK = re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\([^)]*\bbenchmark\b", re.M)

#: JSON strings, or ``//`` and ``/* */`` comments (asv.conf.json allows comments).
_JSON_TOKENS = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[\]}])', re.S)


@dataclass(frozen=True)
class Suite:
    """A revision's benchmarks: ``kind`` (``perfgate``, ``asv``, ``pytest-benchmark``) and the
    directory the worker lists, relative to the revision's root (``/``-separated)."""

    kind: str
    directory: str


def read_asv_conf(text: str, where: str) -> dict:
    """An ``asv.conf.json`` as asv reads it: JSON with ``//`` and ``/* */`` comments and trailing
    commas allowed.

    Raises:
        UserError: not JSON even so, or not an object (naming ``where``).
    """
    stripped = _JSON_TOKENS.sub(lambda m: m.group(1) or "", text)
    stripped = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), stripped)
    try:
        conf = json.loads(stripped)
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(conf, dict):
        raise UserError(f"{where}: must be a JSON object")
    return conf


def find_asv_conf(root: Path, benchmarks: str) -> Path | None:
    """The ``asv.conf.json`` of the repository at ``root``: at the root, else in the configured
    ``benchmarks`` directory, else the first (sorted) one directory down; None without one."""
    for candidate in (root / "asv.conf.json", root / benchmarks / "asv.conf.json"):
        if candidate.is_file():
            return candidate
    below = sorted(root.glob("*/asv.conf.json"))
    return below[0] if below else None


def uses_pytest_benchmark(directory: Path) -> bool:
    """True when ``directory`` has no ``bench_*.py`` file and a test file (``test_*.py``,
    ``*_test.py``) whose test takes the ``benchmark`` fixture."""
    if not directory.is_dir() or any(p for p in directory.rglob("bench_*.py") if "__pycache__" not in p.parts):
        return False
    for path in sorted({*directory.rglob("test_*.py"), *directory.rglob("*_test.py")}):
        try:
            if _USES_BENCHMARK.search(path.read_text(encoding="utf-8", errors="replace")):
                return True
        except OSError:
            continue
    return False


def detect(root: Path, suite: str, benchmarks: str) -> Suite:
    """The convention and benchmark directory of the revision checked out at ``root``.

    Args:
        suite: the config's ``suite`` (``auto``, ``perfgate``, ``asv``, ``pytest-benchmark``).
        benchmarks: the config's ``benchmarks`` directory, relative to ``root``.

    Raises:
        UserError: an ``asv.conf.json`` that is not JSON, or whose ``benchmark_dir`` leaves the
            repository.
    """
    if suite in ("auto", "asv"):
        conf_path = find_asv_conf(root, benchmarks)
        if conf_path is not None:
            where = conf_path.relative_to(root).as_posix()
            conf = read_asv_conf(conf_path.read_text(encoding="utf-8", errors="replace"), where)
            bench_dir = conf.get("benchmark_dir", "benchmarks")
            if not isinstance(bench_dir, str) or not bench_dir:
                raise UserError(f"{where}: benchmark_dir must be a directory name")
            target = (conf_path.parent / bench_dir).resolve()
            if not target.is_relative_to(root.resolve()):
                raise UserError(f"{where}: benchmark_dir {bench_dir!r} is outside the repository")
            return Suite("asv", target.relative_to(root.resolve()).as_posix())
        if suite == "asv":
            return Suite("asv", benchmarks)
    if suite == "auto":
        return Suite("pytest-benchmark" if uses_pytest_benchmark(root / benchmarks) else "perfgate", benchmarks)
    return Suite(suite, benchmarks)


def detect_in(directory: Path, suite: str) -> str:
    """The convention of a benchmark directory given as it is (``--benchmarks DIR``): ``suite``
    unless ``auto``; then asv when an ``asv.conf.json`` sits beside ``DIR`` (asv's layout), else
    as :func:`detect` decides for the contents of ``DIR``."""
    if suite != "auto":
        return suite
    if (directory.parent / "asv.conf.json").is_file():
        return "asv"
    return "pytest-benchmark" if uses_pytest_benchmark(directory) else "perfgate"
