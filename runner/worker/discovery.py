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

import re
import importlib.util
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

#: Benchmark conventions a worker can list and run (config key ``suite``, "auto" resolved by the parent).
SUITES = ("perfgate", "asv", "pytest-benchmark")


class Skipped(Exception):
    """A benchmark case its own suite skips on this revision (asv: ``NotImplementedError`` from a
    setup; pytest: a skip); reported as skipped, not failed. The message says why."""


@dataclass
class Prepared:
    """A benchmark case set up in a worker: ``fn`` is the zero-argument callable timed,
    ``teardown`` (or None) runs when the worker process ends."""

    fn: Callable[[], Any]
    teardown: Callable[[], None] | None = None


def param_label(value: Any, position: int | None = None) -> str:
    """A parameter value as it appears in a benchmark name: stable across processes and sides.

    ``str()`` of a function or an object without its own ``__repr__`` carries a memory address
    (``<function silu at 0x7f…>``), which differs between processes, so it cannot name a
    benchmark on both sides (asv made the same choice). Rules: strings as they are; numbers,
    ``None`` and booleans by ``repr``; torch dtypes and devices by ``str`` (``torch.bfloat16``,
    ``cuda:0``); enum members ``Class.NAME``; functions, classes and other named callables by
    their qualified name (``gelu``, ``MyNorm``); tuples and lists element-wise; anything else by
    ``repr`` when that has no address, else its type name with ``#position`` in the list.
    """
    import enum

    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float, complex)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(param_label(v) for v in value)
        return f"({inner}{',' if len(value) == 1 and isinstance(value, tuple) else ''})" if isinstance(value, tuple) \
            else f"[{inner}]"
    module = type(value).__module__ or ""
    if module.startswith("torch") and type(value).__name__ in ("dtype", "device", "layout", "memory_format"):
        return str(value)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str) and (callable(value) or isinstance(value, type)):
        return name.replace("<locals>.", "")
    text = repr(value)
    if _ADDRESS.search(text):
        return f"{type(value).__name__}#{position if position is not None else 0}"
    return text


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def case_name(func: str, labels: dict[str, str]) -> str:
    """``bench_x`` or ``bench_x[a=1,b=fp16]`` from parameter labels (:func:`param_label`), keys
    in the order ``params`` declares them."""
    if not labels:
        return func
    return f"{func}[{','.join(f'{k}={v}' for k, v in labels.items())}]"


def labelled_combos(params: dict[str, Iterable[Any]] | None) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """:func:`expand_params` with each combination's labels: ``[(labels, values), ...]``.

    Raises:
        TypeError: as :func:`expand_params`.
    """
    combos = expand_params(params)
    if combos == [{}]:
        return [({}, {})]
    positions = {key: {id(v): i for i, v in enumerate(vals)} for key, vals in (params or {}).items()}
    out = []
    for values in combos:
        labels = {k: param_label(v, positions[k].get(id(v))) for k, v in values.items()}
        out.append((labels, values))
    return out


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
        ``directory``, ``params`` the labels of the values, :func:`param_label`); errors are ``{file, error}`` for files that failed to import or whose
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
                combos = labelled_combos(getattr(func, "params", None))
            except TypeError as exc:
                errors.append({"file": rel, "error": f"{attr}: {exc}"})
                continue
            for labels, _ in combos:
                cases.append({"name": case_name(attr, labels), "file": rel, "func": attr, "params": labels})
    return cases, errors


def list_suite(directory: str | Path, suite: str | None = None) -> dict:
    """List the benchmarks of ``directory`` by the convention ``suite`` (one of :data:`SUITES`;
    None = perfgate's ``bench_*``), worker side.

    Returns:
        ``{benchmarks, errors, skipped}`` (:func:`collect`; ``skipped`` lists ``{name, file,
        reason}`` of benchmarks the suite has but perfgate does not run).
    """
    if suite == "asv":
        from .asv_suite import collect as collect_asv

        return collect_asv(directory)
    if suite == "pytest-benchmark":
        from .pytest_suite import collect as collect_pytest

        return collect_pytest(directory)
    cases, errors = collect(directory)
    return {"benchmarks": cases, "errors": errors, "skipped": []}


def prepare(req: dict, device: str) -> Prepared:
    """Set up the case a ``setup`` request names (``dir``, ``file``, ``func``, ``name``, ``suite``).

    Raises:
        LookupError: the case is not defined on this revision.
        Skipped: the suite skips the case (:class:`Skipped`).
        TypeError: a perfgate benchmark did not return a callable.
    """
    suite = req.get("suite")
    if suite == "asv":
        from .asv_suite import prepare as prepare_asv

        return prepare_asv(req["dir"], req["file"], req["func"], req["name"])
    if suite == "pytest-benchmark":
        from .pytest_suite import prepare as prepare_pytest

        return prepare_pytest(req["dir"], req["name"])
    module = import_file(Path(req["dir"]) / req["file"])
    func, params = resolve_case(module, req["func"], req["name"], req["file"])
    fn = func(device, **params)
    if not callable(fn):
        raise TypeError(f"{req['func']} must return the zero-argument callable to time, got {type(fn).__name__}")
    return Prepared(fn)


def resolve_case(module, func_name: str, name: str, file: str):
    """The benchmark function and the parameter values of the case called ``name`` in ``module``.

    Parameter values never cross the process boundary (a dtype or a function is not JSON): the
    parent names a case, and the worker finds its values again in the file it imported, on its
    own revision.

    Raises:
        LookupError: the function, or that parameter combination, is not defined in ``file`` on
            this revision (the compare records the benchmark as ``new`` or ``failed``).
    """
    func = getattr(module, func_name, None)
    if func is None or not callable(func):
        raise LookupError(f"{func_name} is not defined in {file} on this revision")
    for labels, values in labelled_combos(getattr(func, "params", None)):
        if case_name(func_name, labels) == name:
            return func, values
    raise LookupError(f"{name} is not among the params of {func_name} in {file} on this revision")


def format_error(exc: BaseException, limit: int = 8) -> str:
    """The last ``limit`` lines of a traceback: the frames nearest the error and its message."""
    import traceback

    lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()
    return "\n".join(lines[-limit:])
