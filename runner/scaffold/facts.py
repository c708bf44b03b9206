"""The facts about a target repository that ``perfgate init`` decides from (plain records):
:mod:`runner.scaffold.inspect` reads them, :mod:`runner.scaffold.plan` decides from them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModuleClass:
    """A ``torch.nn.Module`` subclass that can be built without arguments.

    Attributes:
        import_path: the module to import it from (``mylib.models``), with ``src/`` layouts
            resolved as the worker's ``sys.path`` does (worktree root and ``src/``).
        name: the class name.
        file: its file, relative to the repository root (POSIX).
    """

    import_path: str
    name: str
    file: str


@dataclass(frozen=True)
class RepoFacts:
    """What ``perfgate init`` needs to know about a repository.

    Attributes:
        existing: paths (relative, POSIX) of the files ``init`` might write that already exist.
        has_bench_files: a ``benchmarks/bench_*.py`` file exists.
        asv_benchmark_dir: the ``benchmark_dir`` of an ``asv.conf.json`` at the root ("" = none).
        pytest_benchmark_files: test files that use the ``benchmark`` fixture (relative, POSIX).
        modules: buildable ``nn.Module`` classes, best candidate first.
        pyproject_config: ``pyproject.toml`` already has a ``[tool.perfgate]`` table.
        script_suite: ``(convention, directory)`` of benchmark scripts that time themselves
            (Triton ``perf_report``/``do_bench``, ``torch.utils.benchmark``), as the registry's
            detectors find them in the usual folders; ``("", "")`` without.
        command_suite: the settings of a benchmark that measures itself (Google Benchmark or
            nvbench sources with a CMake target, or a github-action-benchmark workflow): ``{command,
            command_format, install, why}``; empty without.
    """

    existing: frozenset[str] = frozenset()
    has_bench_files: bool = False
    asv_benchmark_dir: str = ""
    pytest_benchmark_files: tuple[str, ...] = ()
    modules: tuple[ModuleClass, ...] = field(default_factory=tuple)
    pyproject_config: bool = False
    script_suite: tuple[str, str] = ("", "")
    command_suite: dict = field(default_factory=dict)
