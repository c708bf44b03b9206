"""What names a measuring call of a benchmark script (:mod:`runner.conventions.capture` has the
rules): the call as recorded, the labels read from its stack frames, the keys that tell a
script's calls apart, and the points of a Triton ``perf_report`` grid.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
from dataclasses import dataclass
from typing import Any

from .base import case_name, param_label


@dataclass
class Call:
    """One measuring call seen while a script was listed: its family, the parameters the script
    names itself (``given``), the candidate labels read from its stack (``frame``), and whether it
    is a grid point (named by its grid alone)."""

    family: str
    given: dict[str, str]
    frame: dict[str, str]
    grid: bool = False


def varying_keys(calls: list[Call]) -> list[str]:
    """The frame labels that tell ``calls`` apart: keys whose value differs between the calls, in
    order of first appearance, without the given params and without a key whose values split the
    calls exactly as an earlier key's do (``mode`` beside ``kernel_operation_mode``). Empty when the
    given params already name every call once."""
    given_names = [case_name("", c.given) for c in calls]
    if len(set(given_names)) == len(given_names):
        return []
    order: list[str] = []
    for call in calls:
        order += [k for k in call.frame if k not in order and k not in call.given]
    kept, partitions = [], set()
    for key in order:
        values = [call.frame.get(key) for call in calls]
        if len(set(values)) < 2:
            continue
        first: dict[Any, int] = {}
        partition = tuple(first.setdefault(v, len(first)) for v in values)
        if partition in partitions:
            continue
        partitions.add(partition)
        kept.append(key)
    return kept


# -- grids ---------------------------------------------------------------------------------------
def benchmarks_of(mark: Any) -> list:
    benches = getattr(mark, "benchmarks", None)
    return list(benches) if isinstance(benches, (list, tuple)) else [benches] if benches is not None else []


def grid_family(mark: Any, bench: Any) -> str:
    name = getattr(bench, "plot_name", None)
    return str(name) if name else getattr(getattr(mark, "fn", None), "__name__", "perf_report")


def grid_points(bench: Any) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """Every point of a ``triton.testing.Benchmark`` in its table's order (x values, then lines) as
    ``(labels, kwargs)``: labels ``{x_name: label, …, line_arg: line name}``, kwargs the arguments
    its function is called with (``x_names`` and ``line_arg``; ``args`` are added by the caller).
    An x value that is not a tuple applies to every x name, as Triton does."""
    x_names = list(getattr(bench, "x_names", None) or [])
    line_arg = getattr(bench, "line_arg", None)
    line_vals = list(getattr(bench, "line_vals", None) or [])
    line_names = list(getattr(bench, "line_names", None) or [])
    out = []
    for x in list(getattr(bench, "x_vals", None) or []):
        xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(x_names)
        x_args = dict(zip(x_names, xs))
        for i, y in enumerate(line_vals or [None]):
            labels = {k: param_label(v) for k, v in x_args.items()}
            kwargs = dict(x_args)
            if line_arg and line_vals:
                labels[str(line_arg)] = str(line_names[i]) if i < len(line_names) else param_label(y)
                kwargs[line_arg] = y
            out.append((labels, kwargs))
    return out


def marks_in(namespace: dict) -> list:
    """The ``perf_report`` grids (objects with ``fn``, ``benchmarks`` and ``run``) among a module's
    globals, in definition order."""
    return [v for k, v in namespace.items() if not k.startswith("_") and not isinstance(v, type)
            and callable(getattr(v, "run", None)) and hasattr(v, "fn") and hasattr(v, "benchmarks")]


# -- labels from frames ----------------------------------------------------------------------------
def scalar(value: Any, floats: bool = True) -> bool:
    if isinstance(value, bool) or isinstance(value, int) or isinstance(value, enum.Enum):
        return True
    if isinstance(value, str):
        return len(value) <= 80
    if isinstance(value, float):
        return floats
    module = type(value).__module__ or ""
    return module.startswith("torch") and type(value).__name__ in ("dtype", "device")


def label_of(value: Any) -> str | None:
    """A parameter label for a value worth naming a call by (a number, string, dtype, or a short
    tuple/list of them); None for anything else (a tensor, a callable, a module)."""
    if value is None or scalar(value):
        return param_label(value)
    if isinstance(value, (tuple, list)) and 0 < len(value) <= 8 and all(v is None or scalar(v) for v in value):
        return param_label(value)
    return None


def flatten(name: str, value: Any) -> list[tuple[str, Any]]:
    """An argument as ``(key, value)`` items: a dataclass or a namedtuple by its fields, a dict with
    string keys by its items (one level), anything else as itself."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    elif isinstance(value, tuple) and hasattr(value, "_asdict"):
        items = list(value._asdict().items())
    elif isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        items = list(value.items())
    else:
        return [(name, value)]
    out = []
    for key, inner in items:
        if isinstance(inner, dict) and inner and all(isinstance(k, str) for k in inner):
            out += list(inner.items())
        else:
            out.append((key, inner))
    return out


def frame_items(frame: types.FrameType) -> list[tuple[str, str]]:
    """A frame's labelled items: a function's arguments (flattened), or, for the script's top
    level and argument-less functions, its integer, string, boolean and dtype variables."""
    code = frame.f_code
    nargs = code.co_argcount + code.co_kwonlyargcount
    try:
        f_locals = dict(frame.f_locals)
    except Exception:  # noqa: BLE001 - a frame whose locals cannot be read names nothing
        return []
    out = []
    if code.co_name == "<module>" or nargs == 0:
        for key, value in f_locals.items():
            if not key.startswith("_") and scalar(value, floats=False):
                out.append((key, param_label(value)))
        return out
    names = list(code.co_varnames[:nargs])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[nargs + bool(code.co_flags & inspect.CO_VARARGS)])
    for name in names:
        if name in ("self", "cls") or name not in f_locals:
            continue
        for key, value in flatten(name, f_locals[name]):
            label = label_of(value)
            if label is not None and not str(key).startswith("_"):
                out.append((str(key), label))
    # and the integers it loops over (``for m, k, n in shapes:``): sizes, never text, which may
    # carry a time of day
    for key, value in f_locals.items():
        if key not in names and not key.startswith("_") and isinstance(value, int) and not isinstance(value, bool):
            out.append((key, param_label(value)))
    return out
