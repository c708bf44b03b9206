"""The JSON that benchmarks which measure themselves print, read into plain measurements (pure).

Three formats, as their own tools write them:

- **Google Benchmark** (``--benchmark_format=json`` or ``--benchmark_out=F --benchmark_out_format=json``;
  ``google/benchmark`` ``docs/json_format.md``): ``{context, benchmarks: [{name, run_name, run_type,
  repetition_index, real_time, cpu_time, time_unit, error_occurred?, aggregate_name?}]}``. Each
  benchmark's repetitions are its ``run_type: iteration`` entries (``real_time``, converted to
  seconds); where only aggregates were printed (``--benchmark_report_aggregates_only``) its
  ``median`` (else ``mean``) is its one value; failed entries are left out. Names are
  ``run_name``s; their ``/``-separated arguments become params (``BM_copy/N:1024/8`` →
  family ``BM_copy``, params ``N=1024``, ``arg1=8``).
- **nvbench** (``--json F``; ``NVIDIA/nvbench`` ``nvbench/json_printer.cu``): ``{benchmarks: [{name,
  states: [{name, axis_values: [{name, type, value}], summaries: [{tag, data: [{name, value}]}],
  is_skipped}]}]}``. Each state is one benchmark, ``name[axis=value,…]``, its value the GPU time
  (``nv/cold/time/gpu/median``, else ``…/mean``, else the batch GPU mean, else the CPU mean), seconds.
- **github-action-benchmark**'s custom JSON (its ``customSmallerIsBetter`` and
  ``customBiggerIsBetter`` tools): ``[{name, unit, value, range?, extra?}]``; which way is better is
  the tool's name, not in the file, so it is given (:data:`FORMATS`). A time unit (``ns``, ``us``,
  ``µs``, ``ms``, ``s``) is converted to seconds; any other unit stays as written.

Times come out in seconds with direction ``smaller``; a ``customBiggerIsBetter`` value keeps its
unit with direction ``bigger``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

#: Formats :func:`parse` reads (config key ``command_format``; ``auto`` tells Google Benchmark and
#: nvbench by their shape, and needs the custom ones named).
FORMATS = ("auto", "googlebenchmark", "nvbench", "customSmallerIsBetter", "customBiggerIsBetter")

#: Time units to seconds.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0,
              "seconds": 1.0, "second": 1.0, "nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 1e-3}

#: nvbench summaries tried for a state's value, in order (seconds).
NVBENCH_TAGS = ("nv/cold/time/gpu/median", "nv/cold/time/gpu/mean", "nv/batch/time/gpu/mean",
                "nv/cold/time/cpu/median", "nv/cold/time/cpu/mean")


class FormatError(ValueError):
    """Output that is not the format it should be; the message is one line saying what is wrong."""


@dataclass(frozen=True)
class Reported:
    """One benchmark's values in one run of a benchmark that measures itself.

    Attributes:
        name: its name (unique in the run).
        values: its repetitions (seconds for times, else ``unit``), at least one.
        unit: ``s`` for times, else the unit as reported.
        direction: ``smaller`` or ``bigger`` is better.
        family: the name without its arguments (``BM_copy``), for the report's sweeps.
        params: its arguments as labels (``{"N": "1024"}``), in order.
    """

    name: str
    values: tuple[float, ...]
    unit: str = "s"
    direction: str = "smaller"
    family: str = ""
    params: dict = field(default_factory=dict)


def sniff(doc: Any) -> str | None:
    """Which format ``doc`` (parsed JSON) is: ``googlebenchmark``, ``nvbench``, ``custom`` (a list of
    ``{name, value}``, direction unknown), or None."""
    if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
        if isinstance(doc.get("context"), dict):
            return "googlebenchmark"
        if all(isinstance(b, dict) and "states" in b for b in doc["benchmarks"]):
            return "nvbench"
    if isinstance(doc, list) and doc and all(isinstance(e, dict) and "name" in e and "value" in e for e in doc):
        return "custom"
    return None


def load_json(text: str) -> Any:
    """The JSON document in a command's output: the whole text, else the text from the first line
    that starts with ``{`` or ``[`` (a benchmark may print other lines first).

    Raises:
        FormatError: no JSON document there.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    match = re.search(r"^[\[{]", text, re.M)
    if match:
        try:
            return json.loads(text[match.start():])
        except ValueError as exc:
            raise FormatError(f"the output is not JSON from its first '{{' or '[' line on: {exc}") from None
    raise FormatError("the output holds no JSON document" + (f" (it begins {text.strip()[:60]!r})" if text.strip() else
                                                                " (it is empty)"))


def parse(doc: Any, fmt: str = "auto") -> list[Reported]:
    """The measurements in a parsed document of format ``fmt`` (one of :data:`FORMATS`).

    Raises:
        FormatError: the document is not of that format, ``auto`` cannot tell a custom JSON's
            direction, or it holds no measurement.
    """
    kind = sniff(doc)
    if fmt == "auto":
        if kind == "custom":
            raise FormatError("a github-action-benchmark custom JSON: set command_format to customSmallerIsBetter "
                              "or customBiggerIsBetter (which way is better is not in the file)")
        fmt = kind or ""
    if fmt == "googlebenchmark" and kind == "googlebenchmark":
        found = _google(doc)
    elif fmt == "nvbench" and kind == "nvbench":
        found = _nvbench(doc)
    elif fmt in ("customSmallerIsBetter", "customBiggerIsBetter") and kind == "custom":
        found = _custom(doc, "bigger" if fmt == "customBiggerIsBetter" else "smaller")
    else:
        expected = fmt or "Google Benchmark, nvbench or github-action-benchmark JSON"
        raise FormatError(f"not {expected} output (it looks like {kind or 'something else'})")
    if not found:
        raise FormatError(f"{fmt} output with no measurement in it")
    return found


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def split_name(name: str) -> tuple[str, dict[str, str]]:
    """A Google Benchmark name as ``(family, params)``: ``BM_copy/N:1024/8/real_time`` →
    ``("BM_copy", {"N": "1024", "arg1": "8"})`` (``real_time``, ``process_time``, ``manual_time``
    and ``min_time:``/``iterations:``/``repeats:`` modifiers left out; ``threads:2`` kept)."""
    parts = name.split("/")
    params: dict[str, str] = {}
    position = 0
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if part in ("real_time", "process_time", "manual_time") or key in ("min_time", "iterations", "repeats",
                                                                          "min_warmup_time"):
            continue
        if sep:
            params[key] = value
        else:
            params[f"arg{position}"] = part
        position += 1
    return parts[0], params


def _google(doc: dict) -> list[Reported]:
    runs: dict[str, list[float]] = {}
    aggregates: dict[str, dict[str, float]] = {}
    for entry in doc["benchmarks"]:
        if not isinstance(entry, dict) or entry.get("error_occurred"):
            continue
        name = str(entry.get("run_name") or entry.get("name") or "")
        scale = TIME_UNITS.get(str(entry.get("time_unit") or "ns"))
        value = _number(entry.get("real_time"))
        if not name or scale is None or value is None:
            continue
        if entry.get("run_type", "iteration") == "aggregate":
            if entry.get("aggregate_unit", "time") == "time":
                aggregates.setdefault(name, {})[str(entry.get("aggregate_name"))] = value * scale
            continue
        runs.setdefault(name, []).append(value * scale)
    for name, kinds in aggregates.items():
        if name not in runs:
            value = kinds.get("median", kinds.get("mean"))
            if value is not None:
                runs[name] = [value]
    out = []
    for name, values in runs.items():
        family, params = split_name(name)
        out.append(Reported(name, tuple(values), "s", "smaller", family, params))
    return out


def _nvbench(doc: dict) -> list[Reported]:
    out = []
    for bench in doc["benchmarks"]:
        devices = {s.get("device") for s in bench.get("states") or [] if isinstance(s, dict)}
        for state in bench.get("states") or []:
            if not isinstance(state, dict) or state.get("is_skipped"):
                continue
            summaries = {s.get("tag"): s for s in state.get("summaries") or [] if isinstance(s, dict)}
            value = None
            for tag in NVBENCH_TAGS:
                data = {d.get("name"): d.get("value") for d in (summaries.get(tag) or {}).get("data") or []
                        if isinstance(d, dict)}
                value = _number(data.get("value"))
                if value is not None:
                    break
            if value is None:
                continue
            params = {str(a.get("name")): str(a.get("value")) for a in state.get("axis_values") or []
                      if isinstance(a, dict)}
            if len(devices) > 1:
                params = {"Device": str(state.get("device")), **params}
            family = str(bench.get("name"))
            name = f"{family}[{','.join(f'{k}={v}' for k, v in params.items())}]" if params else family
            out.append(Reported(name, (value,), "s", "smaller", family, params))
    return out


def _custom(doc: list, direction: str) -> list[Reported]:
    values: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for entry in doc:
        value = _number(entry.get("value"))
        if value is None:
            continue
        name, unit = str(entry["name"]), str(entry.get("unit") or "")
        scale = TIME_UNITS.get(unit.strip()) if direction == "smaller" else None
        values.setdefault(name, []).append(value * scale if scale else value)
        units[name] = "s" if scale else unit
    return [Reported(name, tuple(v), units[name], direction, name, {}) for name, v in values.items()]
