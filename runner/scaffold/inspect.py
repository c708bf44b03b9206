"""The facts about a target repository that ``perfgate init`` decides from, read without
importing or running any of its code (:mod:`ast` only)."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
from pathlib import Path

from .facts import ModuleClass, RepoFacts

#: Folders whose Python files are not the library's own code.
SKIPPED_DIRS = {".git", ".venv", "venv", "env", "build", "dist", "node_modules", "site-packages", "__pycache__",
                "tests", "test", "testing", "benchmarks", "benchmark", "bench", "examples", "example", "docs",
                "doc", "scripts", "tools", ".perfgate", ".tox", ".nox", ".github"}

#: At most this many Python files are parsed (a monorepo must not make ``init`` slow).
MAX_FILES = 2000

_MODULE_BASES = {"nn.Module", "torch.nn.Module", "Module"}


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
        # pytest's two defaults, as the convention reads them
        found = {*(root / folder).rglob("test_*.py"), *(root / folder).rglob("*_test.py")} \
            if (root / folder).is_dir() else set()
        for path in sorted(found):
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
    return RepoFacts(existing, has_bench, asv_dir, tuple(pytest_files), tuple(modules), pyproject_config,
                     script_suite(root), command_suite(root))


#: Where repositories keep benchmark scripts (Liger-Kernel ``benchmark/scripts``, sglang
#: ``sgl-kernel/benchmark``, vLLM ``benchmarks/kernels``, TransformerEngine ``benchmarks/linear``).
SCRIPT_DIRS = ("benchmark/scripts", "benchmarks/kernels", "benchmarks/ops", "sgl-kernel/benchmark", "benchmarks",
               "benchmark", "bench")


def _candidate_dirs(root: Path) -> list[str]:
    """:data:`SCRIPT_DIRS` that exist, then any other ``bench*`` folder up to two levels down."""
    found = [d for d in SCRIPT_DIRS if (root / d).is_dir()]
    for depth in ("*", "*/*"):
        for path in sorted(root.glob(depth)):
            rel = path.relative_to(root).as_posix()
            if path.is_dir() and path.name.startswith("bench") and rel not in found \
                    and not any(part.startswith(".") or part in SKIPPED_DIRS - {"benchmarks", "benchmark", "bench"}
                                for part in path.relative_to(root).parts):
                found.append(rel)
    return found


def script_suite(root: Path) -> tuple[str, str]:
    """The first folder (:func:`_candidate_dirs`) whose scripts a script convention of the registry
    claims (its ``detect``), as ``(convention, folder)``; ``("", "")`` when none does."""
    from .. import conventions
    from ..config import Config

    scripts = [c for c in conventions.REGISTRY if c.name not in ("perfgate", "asv", "pytest-benchmark", "command")]
    for directory in _candidate_dirs(root):
        for convention in scripts:
            if convention.detect(root, directory, Config()) is not None:
                return convention.name, directory
    return "", ""


_GBENCH_INCLUDE = re.compile(r"#\s*include\s*[<\"](benchmark/benchmark\.h|nvbench/nvbench\.cuh)[>\"]")
_ADD_EXECUTABLE = re.compile(r"add_executable\s*\(\s*([A-Za-z0-9_.+-]+)([^)]*)\)", re.S)


def command_suite(root: Path) -> dict:
    """The command settings of a Google Benchmark or nvbench program with a CMake target (the first
    ``add_executable`` whose sources include ``benchmark/benchmark.h`` or ``nvbench/nvbench.cuh``), else
    of a github-action-benchmark workflow whose producing ``run:`` step can be found; ``{}`` without."""
    for cmake in sorted(root.glob("**/CMakeLists.txt"))[:200]:
        if any(part.startswith(".") or part in ("build", "third_party", "external", "_deps") for part in
               cmake.relative_to(root).parts[:-1]):
            continue
        text = cmake.read_text("utf-8", "replace")
        for match in _ADD_EXECUTABLE.finditer(text):
            sources = [s for s in re.split(r"\s+", match.group(2)) if s.endswith((".cc", ".cpp", ".cu", ".cxx"))]
            for source in sources:
                path = cmake.parent / source.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "")
                include = _GBENCH_INCLUDE.search(path.read_text("utf-8", "replace")) if path.is_file() else None
                if include is None:
                    continue
                target = match.group(1)
                nvbench = include.group(1).startswith("nvbench")
                command = f"./build/{target} --json {{out}}" if nvbench else f"./build/{target} --benchmark_format=json"
                return {"command": command, "command_format": "nvbench" if nvbench else "googlebenchmark",
                        "install": "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j "
                                   f"--target {target}",
                        "why": f"runs the {'nvbench' if nvbench else 'Google Benchmark'} program {target} "
                               f"({path.relative_to(root).as_posix()}) built by CMake"}
    return _action_benchmark(root)


_TOOLS = {"customSmallerIsBetter": "customSmallerIsBetter", "customBiggerIsBetter": "customBiggerIsBetter",
          "googlecpp": "googlebenchmark"}


def _action_benchmark(root: Path) -> dict:
    """The command of a github-action-benchmark workflow step (``tool`` one of :data:`_TOOLS`): the
    ``run:`` line that names its ``output-file-path``, then ``cat`` of that file."""
    for workflow in sorted((root / ".github" / "workflows").glob("*.y*ml")):
        text = workflow.read_text("utf-8", "replace")
        if "github-action-benchmark" not in text:
            continue
        tool = re.search(r"^\s*tool:\s*['\"]?(\w+)", text, re.M)
        out = re.search(r"^\s*output-file-path:\s*['\"]?([^'\"\s]+)", text, re.M)
        if not tool or tool.group(1) not in _TOOLS or not out:
            continue
        runs = [m.group(1).strip() for m in re.finditer(r"^\s*(?:-\s*)?run:\s*([^|>\n][^\n]*)$", text, re.M)]
        producing = [r for r in runs if Path(out.group(1)).name in r]
        if producing:
            return {"command": f"{producing[0]} && cat {shlex.quote(out.group(1))}", "command_format": _TOOLS[tool.group(1)],
                    "install": "", "why": f"runs the step of {workflow.name} that writes {out.group(1)} "
                                          f"(github-action-benchmark's {tool.group(1)})"}
    return {}
