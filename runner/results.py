"""results.json, schema_version 1: the one data model every other part reads and writes.

The layout is the contract in DESIGN.md ("results.json"); the JSON Schema that enforces it
ships beside this module (``schema/results-v1.json``). Times are seconds per call, memory is
bytes, ``ratio`` is head/base of time per call (> 1 is slower). A benchmark that reports its own
measure in another unit (``unit``: ``tokens/s``, ``MB``) keeps its values in that unit; when bigger
is better there (``direction: "bigger"``, a throughput), ``ratio`` is base/head of its value — the
head/base of the time per unit of work — so ``ratio > 1`` is worse for every benchmark. The bot
stores and re-renders only from this file, so additions must be optional and old files must keep
validating.

This module imports nothing heavy (no torch, no numpy): the bot uses it.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from . import __version__
from .errors import ResultsError

SCHEMA_VERSION = 1

#: Characters no UTF-8 writer (a lone surrogate) or PostgreSQL text column (NUL) can hold.
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")

#: Every verdict a benchmark can carry (``change.verdict``), in the schema's order. The subsets
#: below keep that order too: reports iterate them.
VERDICTS = ("regression", "improvement", "unchanged", "inconclusive", "failed", "new", "removed")

#: Verdicts of a decided change.
CHANGED = ("regression", "improvement")

#: Verdicts of a benchmark timed on both sides, with a paired estimate (not failed, new on head
#: or removed from it): the ones Benjamini–Hochberg, memory and compile comparisons take.
PAIRED = ("regression", "improvement", "unchanged", "inconclusive")

#: Verdicts whose benchmarks may get hints (a change, or one that might be): profiled
#: :data:`runner.pipeline.profiling.PROFILE_PASSES` times per side; the others get no hints.
HINTED = ("regression", "improvement", "inconclusive")

#: The order reports list benchmarks and count verdicts in: what needs attention first.
REPORT_ORDER = ("regression", "failed", "improvement", "inconclusive", "new", "removed", "unchanged")

#: Coverage of the interval stored with each side's median (``side.ci_low``/``ci_high``).
MEDIAN_CI_LEVEL = 0.95


def utc_now_iso() -> str:
    """The current time as ISO-8601 UTC with a ``Z`` suffix, second resolution."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- constructors -------------------------------------------------------------------------------
def side(samples: Iterable[float] | None = None, *, peak_memory_bytes: int | None = None,
         error: str | None = None, **extra: Any) -> dict:
    """One side (base or head) of one benchmark.

    Args:
        samples: seconds per call, one value per sample (round), in measurement order.
        peak_memory_bytes: peak allocated device memory during the timing, or None (CPU).
        error: the last lines of the error when the benchmark failed on this side.
        extra: optional fields (``number`` calls per sample, ``warmup_calls``, ...).

    Returns:
        ``{samples, median, peak_memory_bytes, error, **extra}``; ``median`` in seconds or None;
        with two samples or more also ``ci_low``/``ci_high``, the distribution-free
        :data:`MEDIAN_CI_LEVEL` interval of the median (:func:`runner.stats.median_interval`),
        so no reader of the document recomputes a statistic.
    """
    values = [float(s) for s in (samples or [])]
    interval = {}
    if len(values) >= 2:
        from .stats import median_interval

        _, low, high = median_interval(values, MEDIAN_CI_LEVEL)
        interval = {"ci_low": low, "ci_high": high}
    return {"samples": values, "median": _median(values),
            "peak_memory_bytes": int(peak_memory_bytes) if peak_memory_bytes is not None else None,
            "error": error, **extra, **interval}


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def change(verdict: str, ratio: float | None = None, ci_low: float | None = None,
           ci_high: float | None = None, p_value: float | None = None, **record: Any) -> dict:
    """A benchmark's ``change``: ``ratio`` head/base with its interval ``ci_low``/``ci_high``,
    ``p_value``, ``verdict`` (:data:`VERDICTS`), then ``record`` in the caller's order: the timing
    pass's (:func:`runner.pipeline.timing.entries.benchmark_entry` says each key), ``memory`` and
    ``compile`` (:mod:`runner.measures`). Without an estimate (failed, removed) only the verdict."""
    return {"ratio": ratio, "ci_low": ci_low, "ci_high": ci_high, "p_value": p_value,
            "verdict": verdict, **record}


def update_change(entry: dict, **values: Any) -> dict:
    """``entry`` with ``values`` set in its ``change`` (a key it has keeps its place, a new one
    goes last); returns ``entry``."""
    entry["change"] = {**change_of(entry), **values}
    return entry


#: Which way is better for a benchmark's values (``direction``): times and sizes are better smaller.
DIRECTIONS = ("smaller", "bigger")


def benchmark(name: str, file: str | None, *, base: dict | None, head: dict | None, change: dict | None,
              hints: list | None = None, profile: dict | None = None, family: str | None = None,
              params: dict | None = None, unit: str = "s", direction: str = "smaller",
              output: dict | None = None) -> dict:
    """One ``benchmarks[]`` entry ``{name, file, unit, base, head, change, hints, profile}``.

    ``unit`` is ``s`` (seconds per call) unless the benchmark reports another measure itself; then
    ``direction`` (``smaller``/``bigger``, :data:`DIRECTIONS`) is added when bigger is better. ``family``
    (the parametrised family the benchmark belongs to: its function, grid or Google Benchmark
    family) and ``params`` (``{name: label}``, in order) are added when the convention knows them:
    the report reads sweeps from them (:mod:`runner.report.sweeps`). ``output``: base's output
    against head's (:func:`runner.outputs.verdict.output_record`), added when compared."""
    return {"name": name, "file": file, "unit": unit or "s", "base": base, "head": head,
            "change": change, "hints": list(hints or []), "profile": profile,
            **({"direction": direction} if direction != "smaller" else {}),
            **({"family": family} if family else {}),
            **({"params": {str(k): str(v) for k, v in params.items()}} if params else {}),
            **({"output": output} if output is not None else {})}


def direction_of(entry: dict) -> str:
    """``bigger`` when bigger values are better for the benchmark, else ``smaller``."""
    return "bigger" if entry.get("direction") == "bigger" else "smaller"


def failed_file(file: str, error: str) -> dict:
    """The entry of a benchmark file that could not be imported or listed: ``failed`` on head."""
    return benchmark(file, file, base=None, head=side(error=error), change=change("failed"))


def removed(name: str, file: str | None) -> dict:
    """The entry of a benchmark that exists on base only."""
    return benchmark(name, file, base=None, head=None, change=change("removed"))


def measured(name: str, file: str | None, head: dict) -> dict:
    """The entry of a single-revision ``perfgate run``: head measured, no change."""
    return benchmark(name, file, base=None, head=head, change=None)


# -- accessors and derived rules ------------------------------------------------------------------
def output_changed(entry: dict) -> bool:
    """Whether the benchmark's head changes the result (``output.verdict`` ``changed``)."""
    return (entry.get("output") or {}).get("verdict") == "changed"


def change_of(entry: dict) -> dict:
    """``entry["change"]``, or ``{}`` for a benchmark without one (a single run)."""
    return entry.get("change") or {}


def side_of(entry: dict, name: str) -> dict:
    """``entry[name]`` (``base``/``head``), or ``{}`` when that side was not measured."""
    return entry.get(name) or {}


def verdict_of(entry: dict) -> str | None:
    """The benchmark's verdict, None without a change."""
    return change_of(entry).get("verdict")


def is_memory_valued(entry: dict) -> bool:
    """Whether the benchmark's own values are memory (``measure: "memory"``: bytes; its verdict is
    the memory verdict)."""
    return entry.get("measure") == "memory"


def memory_verdict_of(entry: dict) -> str | None:
    """The benchmark's memory verdict (``change.memory.verdict``), None where memory was not compared."""
    memory = change_of(entry).get("memory")
    return memory.get("verdict") if isinstance(memory, dict) else None


def with_run(doc: dict, *, run_id: str | None, run_url: str | None, pull_request: dict | None) -> dict:
    """A copy of ``doc`` that names the CI run it came from (``run_id``, the App's id of the run;
    ``run_url``, the workflow run page) and the pull request it measured (``{number, url}`` or
    None). The Action and the App set these; whatever the document carried is replaced."""
    return {**doc, "run_id": run_id, "run_url": run_url, "pull_request": pull_request}


def summarize(benchmarks: Iterable[dict]) -> dict:
    """Count verdicts: ``{regression, improvement, unchanged, inconclusive, failed, new, removed}``.

    Benchmarks without a ``change`` (a single-revision ``perfgate run``) are not counted.
    """
    counts = {key: 0 for key in VERDICTS}
    for verdict in map(verdict_of, benchmarks):
        if verdict in counts:
            counts[verdict] += 1
    return counts


def new_results(*, repository: str, base: dict | None, head: dict | None, environment: dict,
                settings: dict, benchmarks: list[dict], intent: dict | None = None,
                **extra: Any) -> dict:
    """Assemble a schema_version 1 document; ``summary`` is derived from ``benchmarks``.

    Args:
        repository: ``owner/name`` or a filesystem path.
        base, head: ``{ref, sha}`` (``base`` is None for a single-revision run).
        environment: see :func:`runner.environment.capture` for the keys.
        settings: ``{threshold, alpha, min_rounds, max_time, ...}``.
        benchmarks: entries ``{name, file, unit, base, head, change, hints, profile}``.
        intent: ``{strategy, confidence, signals}``; ``unknown`` with confidence 0 if None.

    Text is made storable (:func:`storable`): a name or error text with a NUL does not make
    the document invalid.
    """
    values = {"schema_version": SCHEMA_VERSION, "tool": {"name": "perfgate", "version": __version__},
              "created_at": utc_now_iso(), "repository": repository, "base": base, "head": head,
              "environment": environment, "settings": settings, "benchmarks": benchmarks,
              "intent": intent or {"strategy": "unknown", "confidence": 0.0, "signals": []},
              "summary": summarize(benchmarks), **extra}  # ``extra`` may replace one (a test's created_at)
    return storable(values)


def storable(value: Any) -> Any:
    """``value`` with NUL and lone surrogates in its strings and keys replaced by U+FFFD (a
    benchmark's name or error text comes from the code under test; see :func:`text_problem`)."""
    if isinstance(value, str):
        return _NOT_TEXT.sub("\ufffd", value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


@lru_cache(maxsize=1)
def schema() -> dict:
    """The JSON Schema (draft 2020-12) of schema_version 1."""
    text = resources.files(__package__).joinpath("schema/results-v1.json").read_text("utf-8")
    return json.loads(text)


def validation_problems(doc: Any) -> list[tuple[str, str]]:
    """All the ways ``doc`` breaks schema_version 1, as ``(path, message)`` pairs in path
    order (empty if valid); ``path`` is ``a/0/b`` or ``(top level)``. A message may quote
    the offending value."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    return [("/".join(str(p) for p in err.absolute_path) or "(top level)", err.message)
            for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]


@lru_cache(maxsize=8)
def _fields_validator(names: tuple[str, ...]):
    import jsonschema

    full = schema()
    return jsonschema.Draft202012Validator({"$defs": full.get("$defs", {}), "type": "object",
                                            "properties": {k: full["properties"][k] for k in names}})


def check_fields(doc: dict, names: Iterable[str]) -> dict:
    """``doc`` once its top-level fields ``names`` match their definitions in the schema — the
    check of what a trusted caller set on a document validated where it came in (the App's and
    the Action's ``run_id``/``run_url``/``pull_request``, a side's ``ref``): the rest stays valid,
    so no second full validation is needed (security review F13).

    Raises:
        ResultsError: the first field that breaks the schema (path and message).
    """
    names = tuple(names)
    error = next(iter(_fields_validator(names).iter_errors({k: doc.get(k) for k in names})), None)
    if error is not None:
        raise ResultsError(f"invalid results.json: {'/'.join(str(p) for p in error.absolute_path)}: {error.message}")
    return doc


def validation_errors(doc: Any) -> list[str]:
    """All the ways ``doc`` breaks schema_version 1, as ``"path: message"`` lines (empty if valid)."""
    return [f"{where}: {message}" for where, message in validation_problems(doc)]


def text_problem(doc: Any) -> str | None:
    """The path (``a/0/b``) of the first string or key of ``doc`` that is not storable text,
    or None: a lone surrogate (JSON's ``"\\ud800"`` escape; no UTF-8 writer, database or web
    page takes one, RFC 7493 forbids it) or NUL (``"\\u0000"``; PostgreSQL text cannot hold it)."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if _NOT_TEXT.search(value):
                return where or "(top level)"
        elif isinstance(value, dict):
            for k, v in value.items():
                path = f"{where}/{k}" if where else str(k)
                if isinstance(k, str) and _NOT_TEXT.search(k):
                    return path
                stack.append((v, path))
        elif isinstance(value, list):
            stack.extend((v, f"{where}/{i}" if where else str(i)) for i, v in enumerate(value))
    return None


def validate(doc: Any) -> dict:
    """Return ``doc`` if it is a valid schema_version 1 document whose text is storable
    (:func:`text_problem`).

    Raises:
        ResultsError: naming the first problems (path and message).
    """
    if isinstance(doc, dict) and doc.get("schema_version") not in (None, SCHEMA_VERSION):
        raise ResultsError(f"unsupported schema_version {doc.get('schema_version')!r} (this perfgate reads {SCHEMA_VERSION})")
    bad_text = text_problem(doc)
    if bad_text is not None:
        raise ResultsError(f"invalid results.json: {bad_text}: text with a NUL or a lone surrogate")
    errors = validation_errors(doc)
    if errors:
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise ResultsError("invalid results.json: " + "; ".join(errors[:3]) + more)
    return doc


#: The largest results.json read (bytes): a real one with profiles of a few hundred benchmarks is
#: a few MB. The App's artifact ingest and the Action's publish and comment read none larger.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


def load(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> dict:
    """Read and validate a results.json file of at most ``max_bytes``.

    Raises:
        ResultsError: the file is missing, larger than ``max_bytes``, not JSON, or not
            schema_version 1.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ResultsError(f"{path} is {size} bytes, over the {max_bytes}-byte limit of a results.json")
        text = path.read_text("utf-8")
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not JSON: {exc}") from None
    return validate(doc)


def dump(doc: dict, path: str | Path, *, validated: bool = False) -> Path:
    """Write ``doc`` as indented JSON; returns the path.

    Validated first (:func:`validate`: the engine's output boundary) unless ``validated``: the
    caller validated the document where it came in and checked what it changed since
    (:func:`check_fields`), as the Action's publish step does.

    Raises:
        ResultsError: ``doc`` is not a valid schema_version 1 document.
    """
    if not validated:
        validate(doc)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", "utf-8")
    return path
