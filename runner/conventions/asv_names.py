"""asv's vocabulary, as asv reads it (pure; :mod:`runner.conventions.asv` has the convention):
benchmark types by name, parameters and their combinations with labels, case and module names,
and the fields and values of the types that measure themselves.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from .base import BenchmarkShapeError, param_label


#: asv's benchmark types: the name pattern of each (``name_regex`` in asv_runner).
KINDS = {
    "time": re.compile(r"^(Time[A-Z_].+)|(time_.+)$"),
    "peakmem": re.compile(r"^(PeakMem[A-Z_].+)|(peakmem_.+)$"),
    "mem": re.compile(r"^(Mem[A-Z_].+)|(mem_.+)$"),
    "track": re.compile(r"^(Track[A-Z_].+)|(track_.+)$"),
    "timeraw": re.compile(r"^(Timeraw[A-Z_].+)|(timeraw_.+)$"),
}

#: Why an asv benchmark type is not run (listed as skipped with this reason).
NOT_RUN = {
    "timeraw": "timeraw_ benchmarks (code run in a new interpreter) are not run by perfgate",
}

#: asv's types that report a value of one run instead of being timed: the ``kind`` of memory
#: record each gives (None: not memory).
SELF_MEASURED = {"peakmem": "rss", "mem": "size", "track": None}

#: asv's unit of a ``track_*`` value without a ``unit`` attribute.
TRACK_UNIT = "unit"


def kind_of(name: str) -> str | None:
    """asv's benchmark type of a function or method called ``name`` (``time``, ``peakmem``, ``mem``,
    ``track``, ``timeraw``), or None when the name is not a benchmark's."""
    for kind, pattern in KINDS.items():
        if pattern.match(name):
            return kind
    return None


def normalize_params(params: Any, param_names: Any) -> tuple[list[list], list[str]]:
    """asv's reading of ``params`` and ``param_names`` (``_validate_params``): a flat list is one
    parameter, a list of lists one parameter per inner list; names missing at the end become
    ``paramK`` (K from 1), extra names are dropped.

    Raises:
        TypeError: ``params`` or ``param_names`` is not a list.
    """
    if isinstance(params, (str, bytes)) or not isinstance(params, (list, tuple)):
        raise TypeError(f"params must be a list (or a list of lists), got {type(params).__name__}")
    if isinstance(param_names, (str, bytes)) or not isinstance(param_names, (list, tuple)):
        raise TypeError(f"param_names must be a list of strings, got {type(param_names).__name__}")
    params = list(params)
    if params and not isinstance(params[0], (tuple, list)):
        params = [params]
    else:
        params = [list(entry) for entry in params]
    names = [str(n) for n in param_names][: len(params)]
    names += [f"param{k + 1}" for k in range(len(names), len(params))]
    return params, names


def _unique_labels(values: list) -> list[str]:
    """:func:`param_label` of each value of one parameter; equal labels get `` (k)`` as in asv."""
    labels = [param_label(v, i) for i, v in enumerate(values)]
    seen: dict[str, int] = {}
    repeated = {label for label in labels if labels.count(label) > 1}
    out = []
    for label in labels:
        if label in repeated:
            out.append(f"{label} ({seen.get(label, 0)})")
            seen[label] = seen.get(label, 0) + 1
        else:
            out.append(label)
    return out


def labelled_combos(params: list[list], param_names: list[str]) -> list[tuple[dict[str, str], tuple]]:
    """Every parameter combination (asv's order: the product of ``params``) as ``(labels, values)``:
    ``labels`` maps each name of :func:`normalize_params` to the value's label, ``values`` is the
    tuple the setups and the benchmark are called with. No params → ``[({}, ())]``."""
    if not params:
        return [({}, ())]
    labels = [_unique_labels(values) for values in params]
    out = []
    for index in itertools.product(*(range(len(values)) for values in params)):
        out.append(({name: labels[k][i] for k, (name, i) in enumerate(zip(param_names, index))},
                    tuple(params[k][i] for k, i in enumerate(index))))
    return out


def case_name(bench_name: str, labels: dict[str, str]) -> str:
    """``module.Class.time_x`` or ``module.Class.time_x(1, torch.float32)`` (labels in order)."""
    return f"{bench_name}({', '.join(labels.values())})" if labels else bench_name


def module_name(package: str, rel_file: str) -> str:
    """The dotted module name of ``rel_file`` (relative to the benchmark directory, ``/``-separated)
    in the package ``package``: ``("benchmarks", "sub/mod.py")`` → ``benchmarks.sub.mod``;
    ``__init__.py`` files name their package."""
    parts = [p for p in rel_file.split("/") if p]
    parts[-1] = parts[-1][: -len(".py")] if parts[-1].endswith(".py") else parts[-1]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def self_measured_fields(kind: str, name: str, unit: Any = None) -> dict:
    """The fields a listed case of asv's type ``kind`` (``peakmem``, ``mem``, ``track``) carries
    beside its name: ``{measures: "self", group, unit, asv_kind, measure?, memory_kind?}`` —
    ``unit`` ``B`` for the memory types (with ``measure: "memory"`` and ``memory_kind`` the
    :data:`SELF_MEASURED` kind of their records), else the ``unit`` attribute as text
    (:data:`TRACK_UNIT` without one)."""
    out = {"measures": "self", "group": name, "asv_kind": kind}
    if SELF_MEASURED[kind] is not None:
        out.update(unit="B", measure="memory", memory_kind=SELF_MEASURED[kind])
    else:
        out["unit"] = str(unit) if unit not in (None, "") else TRACK_UNIT
    return out


def track_value(value: Any, name: str) -> float:
    """The number a ``track_*`` benchmark returned, as a float.

    Raises:
        BenchmarkShapeError: not a real number, not finite, or not positive (perfgate compares a
            track value as a head/base ratio, which needs positive numbers).
    """
    number = None
    if not isinstance(value, (bool, str, bytes)) and hasattr(value, "__float__"):
        try:
            number = float(value)  # an int, a float, a numpy or torch scalar, a Fraction
        except (TypeError, ValueError):
            number = None
    if number is None:
        raise BenchmarkShapeError(f"{name}: a track_ benchmark must return a number, got {type(value).__name__}")
    value = number
    if not math.isfinite(value) or value <= 0:
        raise BenchmarkShapeError(f"{name}: returned {value!r}; perfgate compares track_ values as head/base "
                                  "ratios, so they must be finite and positive")
    return value
