"""The facts about a target repository that ``perfgate init`` decides from, read without
importing or running any of its code (:mod:`ast` only)."""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

#: Folders whose Python files are not the library's own code.
SKIPPED_DIRS = {".git", ".venv", "venv", "env", "build", "dist", "node_modules", "site-packages", "__pycache__",
                "tests", "test", "testing", "benchmarks", "benchmark", "bench", "examples", "example", "docs",
                "doc", "scripts", "tools", ".perfgate", ".tox", ".nox", ".github"}

#: At most this many Python files are parsed (a monorepo must not make ``init`` slow).
MAX_FILES = 2000

_MODULE_BASES = {"nn.Module", "torch.nn.Module", "Module"}


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
    """

    existing: frozenset[str] = frozenset()
    has_bench_files: bool = False
    asv_benchmark_dir: str = ""
    pytest_benchmark_files: tuple[str, ...] = ()
    modules: tuple[ModuleClass, ...] = field(default_factory=tuple)
    pyproject_config: bool = False


def _python_files(root: Path) -> list[Path]:
    """The library's own ``.py`` files, at most :data:`MAX_FILES`, without descending into
    :data:`SKIPPED_DIRS` or hidden folders (a checkout's .git or .venv is never walked)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                found.append(Path(folder) / name)
                if len(found) >= MAX_FILES:
                    return found
    return found


def _import_path(rel: Path) -> str | None:
    parts = list(rel.with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts) or parts[-1] in ("setup", "conftest", "__main__"):
        return None
    return ".".join(parts)


def _buildable_without_arguments(cls: ast.ClassDef) -> bool:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args
            positional = args.posonlyargs + args.args
            required = len(positional) - 1 - len(args.defaults)  # minus self
            required_kw = sum(1 for d in args.kw_defaults if d is None)
            return required <= 0 and required_kw == 0
    return True


def module_classes(source: str, import_path: str, file: str) -> list[ModuleClass]:
    """The top-level ``nn.Module`` subclasses of one file's source that need no constructor
    argument (a ``SyntaxError`` gives none)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        if any(ast.unparse(base) in _MODULE_BASES for base in node.bases) and _buildable_without_arguments(node):
            found.append(ModuleClass(import_path, node.name, file))
    return found


def _uses_benchmark_fixture(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
               and any(a.arg == "benchmark" for a in node.args.args) for node in ast.walk(tree))


def inspect_repo(root: str | Path, candidates: tuple[str, ...]) -> RepoFacts:
    """Read the facts of the repository at ``root``; ``candidates``: the relative paths
    ``init`` may write, to learn which exist. Never imports the repository's code."""
    root = Path(root)
    existing = frozenset(c for c in candidates if (root / c).exists())
    has_bench = any((root / "benchmarks").glob("bench_*.py"))
    asv_dir = ""
    asv_conf = root / "asv.conf.json"
    if asv_conf.is_file():
        try:
            # asv.conf.json allows // comments (asv strips them before parsing).
            text = "\n".join(line for line in asv_conf.read_text("utf-8", "replace").splitlines()
                             if not line.lstrip().startswith("//"))
            asv_dir = str(json.loads(text).get("benchmark_dir", "benchmarks")) or "benchmarks"
        except (ValueError, AttributeError):
            asv_dir = "benchmarks"
    pytest_files = []
    for folder in ("tests", "test", "benchmarks", "benchmark", "bench"):
        for path in sorted((root / folder).rglob("test_*.py")) if (root / folder).is_dir() else []:
            if _uses_benchmark_fixture(path.read_text("utf-8", "replace")):
                pytest_files.append(path.relative_to(root).as_posix())
    modules: list[ModuleClass] = []
    for path in _python_files(root):
        rel = path.relative_to(root)
        import_path = _import_path(rel)
        if import_path is None:
            continue
        modules += module_classes(path.read_text("utf-8", "replace"), import_path, rel.as_posix())
    modules.sort(key=lambda m: (m.file.count("/"), m.file, m.name))
    pyproject_config = False
    if (root / "pyproject.toml").is_file():
        import tomllib

        try:
            pyproject_config = "perfgate" in tomllib.loads((root / "pyproject.toml").read_text("utf-8")).get("tool", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
            pyproject_config = False
    return RepoFacts(existing, has_bench, asv_dir, tuple(pytest_files), tuple(modules), pyproject_config)
