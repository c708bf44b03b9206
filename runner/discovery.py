"""Benchmark discovery: ``bench_*.py`` files, ``bench_*`` functions, ``params`` products, names.

A benchmark file needs no import of perfgate::

    def bench_layer_norm(device, rows=4096):
        x = torch.randn(rows, 1024, device=device)
        ln = torch.nn.LayerNorm(1024, device=device)
        return lambda: ln(x)          # the zero-argument callable that is timed

    bench_layer_norm.params = {"rows": [1024, 4096]}

gives ``bench_layer_norm[rows=1024]`` and ``bench_layer_norm[rows=4096]``. The pure helpers
(names, products, filters) run in the parent; :func:`collect` imports files and so runs only
inside a worker process.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any, Iterable


def case_name(func: str, params: dict[str, Any]) -> str:
    """``bench_x`` or ``bench_x[a=1,b=fp16]`` (keys in the order ``params`` declares them)."""
    if not params:
        return func
    return f"{func}[{','.join(f'{k}={v}' for k, v in params.items())}]"


def expand_params(params: dict[str, Iterable[Any]] | None) -> list[dict[str, Any]]:
    """Cartesian product of a ``params`` mapping: ``{"a": [1, 2], "b": ["x"]}`` →
    ``[{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]``; ``None``/``{}`` → ``[{}]``.

    Raises:
        TypeError: ``params`` is not a mapping of names to non-string iterables.
    """
    if not params:
        return [{}]
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of name -> list of values, got {type(params).__name__}")
    keys = list(params)
    values = []
    for key in keys:
        vals = params[key]
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
            raise TypeError(f"params[{key!r}] must be a list of values, got {vals!r}")
        values.append(list(vals))
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def matches(name: str, pattern: str | None) -> bool:
    """``--filter``: a glob (``*``, ``?``, ``[``) matched against the name, else a substring.

    A glob is matched against the whole name and against the name without its parameters,
    so ``bench_norm*`` selects every ``bench_norm[...]`` case.
    """
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?"):
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name.split("[", 1)[0], pattern)
    return pattern in name


def bench_files(directory: str | Path) -> list[Path]:
    """The ``bench_*.py`` files under ``directory`` (recursively), sorted."""
    root = Path(directory)
    return sorted(p for p in root.rglob("bench_*.py") if "__pycache__" not in p.parts)


def import_file(path: Path):
    """Import a benchmark file as its own module (a unique name, so sides and files never clash)."""
    name = "perfgate_bench_" + "_".join(path.with_suffix("").parts[-3:]).replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def collect(directory: str | Path) -> tuple[list[dict], list[dict]]:
    """Import every benchmark file under ``directory`` (worker side) and list its cases.

    Returns:
        ``(cases, errors)``: cases are ``{name, file, func, params}`` (``file`` relative to
        ``directory``); errors are ``{file, error}`` for files that failed to import or whose
        ``params`` are malformed.
    """
    root = Path(directory)
    cases: list[dict] = []
    errors: list[dict] = []
    for path in bench_files(root):
        rel = str(path.relative_to(root))
        try:
            module = import_file(path)
        except BaseException as exc:  # noqa: BLE001 - a broken file must not stop discovery
            errors.append({"file": rel, "error": format_error(exc)})
            continue
        for attr in sorted(vars(module)):
            func = getattr(module, attr)
            if not attr.startswith("bench_") or not callable(func):
                continue
            if getattr(func, "__module__", module.__name__) != module.__name__:
                continue  # imported from elsewhere
            try:
                combos = expand_params(getattr(func, "params", None))
            except TypeError as exc:
                errors.append({"file": rel, "error": f"{attr}: {exc}"})
                continue
            for params in combos:
                cases.append({"name": case_name(attr, params), "file": rel, "func": attr, "params": params})
    return cases, errors


def format_error(exc: BaseException, limit: int = 8) -> str:
    """The last ``limit`` lines of a traceback: the frames nearest the error and its message."""
    import traceback

    lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()
    return "\n".join(lines[-limit:])
