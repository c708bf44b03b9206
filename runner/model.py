"""results.json's entries as frozen dataclasses: the typed model the engine builds documents with
and readers may load them into (``from_json(data, version)`` / ``to_json()``).

The JSON is the contract (DESIGN.md "results.json", ``schema/results-v1.json``); these classes
write exactly it. Each class names the keys it knows, in the order perfgate writes them; a key a
document carries and the class does not know (an older or newer writer's, a test's) is kept in
``extra`` and written back, and a known key a document lacks stays absent (:data:`ABSENT`, never
written as ``null``), so ``Cls.from_json(d).to_json() == d`` for every JSON object ``d``, key order
included (a loaded record remembers its document's order). Loading does not validate:
:func:`runner.results.validate` does that at the edges (a document read from outside).

The layout follows pyperf's data model (psf/pyperf ``pyperf/_bench.py``: ``Run._as_json`` and
``Run._json_load(version, data, ...)``, ``Benchmark._json_load``): plain data classes, each owning
its JSON form in both directions, the format version handed down. Units as in
:mod:`runner.results`: seconds per call, bytes, ``ratio`` head/base (> 1 worse).

Pure and light (standard library only): the App imports it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar

SCHEMA_VERSION = 1


class _Absent:
    """The type of :data:`ABSENT`."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


#: A known key the document does not carry (distinct from ``None``, which is written as ``null``).
ABSENT: Any = _Absent()


class Verdict(StrEnum):
    """A benchmark's verdict (``change.verdict``), in the schema's order. str-valued: a member
    equals its string (``Verdict.REGRESSION == "regression"``) and is written as it in JSON, so
    documents and older string comparisons are unchanged."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    FAILED = "failed"
    NEW = "new"
    REMOVED = "removed"


#: Verdicts of a decided change (the subsets below are tuples in the schema's order: reports iterate them).
CHANGED = (Verdict.REGRESSION, Verdict.IMPROVEMENT)

#: Verdicts of a benchmark timed on both sides, with a paired estimate (not failed, new on head
#: or removed from it): the ones Benjamini–Hochberg, memory and compile comparisons take.
PAIRED = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.UNCHANGED, Verdict.INCONCLUSIVE)

#: Verdicts whose benchmarks may get hints (a change, or one that might be): profiled
#: :data:`runner.pipeline.profiling.PROFILE_PASSES` times per side; the others get no hints.
HINTED = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE)


@dataclass(frozen=True)
class Record:
    """Base of the model's classes: known keys as fields (document order), the rest in ``extra``.

    ``NESTED`` maps a field to the class its object (or, in a one-item list, each item of its
    list) loads as; anything else (numbers, text, the profile's and the environment's free-form
    objects) is kept as it is."""

    NESTED: ClassVar[dict[str, Any]] = {}

    extra: dict = field(default_factory=dict, kw_only=True)
    order: tuple = field(default=(), kw_only=True, compare=False, repr=False)

    def to_json(self) -> dict:
        """The JSON object (plain dicts and lists), in the loaded document's key order, else the
        class's; ``extra`` keys after the known ones."""
        present = {f.name: getattr(self, f.name) for f in fields(self)
                   if f.name not in ("extra", "order") and getattr(self, f.name) is not ABSENT}
        values = {**{k: _dump(v) for k, v in present.items()}, **self.extra}
        keys = [k for k in self.order if k in values] + [k for k in values if k not in self.order]
        return {k: values[k] for k in keys}

    @classmethod
    def from_json(cls, data: dict, version: int = SCHEMA_VERSION):
        """The record of the JSON object ``data`` (format ``version``; 1 is the only one so far).
        Total over JSON objects: a value of an unexpected type is kept as it is, not checked."""
        known = {f.name for f in fields(cls)} - {"extra", "order"}
        kwargs: dict[str, Any] = {name: ABSENT for name in known}
        extra = {}
        for key, value in data.items():
            if key in known:
                kwargs[key] = _load(cls.NESTED.get(key), value, version)
            else:
                extra[key] = value
        return cls(**kwargs, extra=extra, order=tuple(data))

    def replace(self, **changes):
        """A copy with ``changes`` (a field set to :data:`ABSENT` is left out of the JSON)."""
        return dataclasses.replace(self, **changes)


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return value


def _load(kind: Any, value: Any, version: int) -> Any:
    if isinstance(kind, list):
        return [_load(kind[0], v, version) for v in value] if isinstance(value, list) else value
    if kind is not None and isinstance(value, dict):
        return kind.from_json(value, version)
    return value


@dataclass(frozen=True)
class Side(Record):
    """One side (base or head) of one benchmark: ``samples`` seconds per call (one per round),
    their ``median``, ``peak_memory_bytes`` during the timing, ``error`` (the failure's last lines);
    ``number`` calls per sample, ``warmup_calls``, ``first_call_s``; ``memory``/``compile`` records
    (:func:`runner.measures.memory_side`, ``compile_side``) and ``measure_error``; ``others_busy``,
    ``steal``, ``cpu_fraction`` (mean fractions during the samples); ``ci_low``/``ci_high`` the
    interval of the median (:data:`runner.results.MEDIAN_CI_LEVEL`)."""

    samples: Any = ABSENT
    median: Any = ABSENT
    peak_memory_bytes: Any = ABSENT
    error: Any = ABSENT
    number: Any = ABSENT
    warmup_calls: Any = ABSENT
    first_call_s: Any = ABSENT
    memory: Any = ABSENT
    compile: Any = ABSENT
    measure_error: Any = ABSENT
    others_busy: Any = ABSENT
    steal: Any = ABSENT
    cpu_fraction: Any = ABSENT
    ci_low: Any = ABSENT
    ci_high: Any = ABSENT


@dataclass(frozen=True)
class Pair(Record):
    """One process pair of a benchmark (``change.pairs``): its first round ``start``, its
    ``rounds``, its own head/base ``ratio`` (None under 2 rounds), whether the estimate ``used`` it,
    the memory ``layout`` (fork server) it ran in, its ``warmup`` (``{rounds, calls: {side: n},
    seconds, steady}``)."""

    start: Any = ABSENT
    rounds: Any = ABSENT
    ratio: Any = ABSENT
    used: Any = ABSENT
    layout: Any = ABSENT
    warmup: Any = ABSENT


@dataclass(frozen=True)
class Change(Record):
    """Base vs head of one benchmark: ``ratio`` head/base with its interval ``ci_low``/``ci_high``
    at ``ci_level``, ``p_value``, ``verdict`` (:class:`runner.results.Verdict`); the timing pass's
    record (:func:`runner.pipeline.entries.benchmark_entry` says each key); ``memory`` and
    ``compile`` (:mod:`runner.measures`)."""

    NESTED: ClassVar[dict[str, Any]] = {"pairs": [Pair]}

    ratio: Any = ABSENT
    ci_low: Any = ABSENT
    ci_high: Any = ABSENT
    p_value: Any = ABSENT
    verdict: Any = ABSENT
    ci_level: Any = ABSENT
    eq_low: Any = ABSENT
    eq_high: Any = ABSENT
    rounds: Any = ABSENT
    process_pairs: Any = ABSENT
    rounds_per_pair: Any = ABSENT
    pairs: Any = ABSENT
    between_process_sd: Any = ABSENT
    pair_sd: Any = ABSENT
    resolvable: Any = ABSENT
    disturbed_rounds: Any = ABSENT
    clock_rounds: Any = ABSENT
    clock_reasons: Any = ABSENT
    shared_number: Any = ABSENT
    dropped_rounds: Any = ABSENT
    futile: Any = ABSENT
    budget_cut: Any = ABSENT
    p_adjusted: Any = ABSENT
    stop_reason: Any = ABSENT
    seconds: Any = ABSENT
    timing_seconds: Any = ABSENT
    memory: Any = ABSENT
    compile: Any = ABSENT

    @classmethod
    def none(cls, verdict: str) -> "Change":
        """The change of a benchmark with no estimate (failed, removed): its ``verdict`` alone."""
        return cls(None, None, None, None, verdict)


@dataclass(frozen=True)
class BenchmarkResult(Record):
    """One ``benchmarks[]`` entry: ``name``, ``file``, ``unit``, each :class:`Side` (None: not
    measured), the :class:`Change` (None: a single-revision run), ``hints``, ``profile``; optional
    ``direction``, ``family``, ``params``, ``measure`` and ``profile_errors``."""

    NESTED: ClassVar[dict[str, Any]] = {"base": Side, "head": Side, "change": Change}

    name: Any = ABSENT
    file: Any = ABSENT
    unit: Any = ABSENT
    base: Any = ABSENT
    head: Any = ABSENT
    change: Any = ABSENT
    hints: Any = ABSENT
    profile: Any = ABSENT
    direction: Any = ABSENT
    family: Any = ABSENT
    params: Any = ABSENT
    measure: Any = ABSENT
    profile_errors: Any = ABSENT


@dataclass(frozen=True)
class Settings(Record):
    """``settings``: what the compare (or run) was asked and chose — the thresholds and budget
    (fractions and seconds), the looks, the policy's source, the suite, the skipped benchmarks and
    where the budget went (``budget``)."""

    threshold: Any = ABSENT
    alpha: Any = ABSENT
    min_rounds: Any = ABSENT
    max_time: Any = ABSENT
    max_rounds: Any = ABSENT
    pair_rounds: Any = ABSENT
    looks: Any = ABSENT
    ci_level: Any = ABSENT
    eq_level: Any = ABSENT
    min_sample_time: Any = ABSENT
    cold_cache: Any = ABSENT
    fail_threshold: Any = ABSENT
    memory_threshold: Any = ABSENT
    fail_on_memory_regression: Any = ABSENT
    process_noise: Any = ABSENT
    min_process_pairs: Any = ABSENT
    allocator: Any = ABSENT
    filter: Any = ABSENT
    profile: Any = ABSENT
    config_source: Any = ABSENT
    config_changed_by_head: Any = ABSENT
    suite: Any = ABSENT
    skipped: Any = ABSENT
    looks_pairs: Any = ABSENT
    budget: Any = ABSENT


@dataclass(frozen=True)
class WorkerRecord(Record):
    """``environment.worker``: the conditions both workers ran under (:mod:`runner.pipeline.conditions`:
    isolation, CPUs, threads, allocator, ASLR, the host's settings), each side's process facts
    (``sides``) and the ``timer``."""

    isolation: Any = ABSENT
    cpus: Any = ABSENT
    threads: Any = ABSENT
    default_threads: Any = ABSENT
    reduced: Any = ABSENT
    note: Any = ABSENT
    allocator: Any = ABSENT
    allocator_env: Any = ABSENT
    omp_num_threads: Any = ABSENT
    omp_wait_policy: Any = ABSENT
    aslr: Any = ABSENT
    host: Any = ABSENT
    sides: Any = ABSENT
    timer: Any = ABSENT


@dataclass(frozen=True)
class Results(Record):
    """A whole results.json document (schema_version 1): ``benchmarks`` as
    :class:`BenchmarkResult`, ``settings`` as :class:`Settings`; ``environment``, ``intent``,
    ``summary`` and the optional sections (``selection``, ``code_map``, ``bisect``) as their JSON
    objects (:attr:`worker` reads ``environment.worker``)."""

    NESTED: ClassVar[dict[str, Any]] = {"benchmarks": [BenchmarkResult], "settings": Settings}

    schema_version: Any = ABSENT
    tool: Any = ABSENT
    created_at: Any = ABSENT
    repository: Any = ABSENT
    base: Any = ABSENT
    head: Any = ABSENT
    environment: Any = ABSENT
    settings: Any = ABSENT
    benchmarks: Any = ABSENT
    intent: Any = ABSENT
    summary: Any = ABSENT
    kind: Any = ABSENT
    bisect: Any = ABSENT
    selection: Any = ABSENT
    code_map: Any = ABSENT
    run_id: Any = ABSENT
    run_url: Any = ABSENT
    pull_request: Any = ABSENT

    @classmethod
    def from_json(cls, data: dict, version: int | None = None) -> "Results":
        """The document ``data``; ``version`` defaults to its own ``schema_version``.

        Raises:
            ValueError: a ``schema_version`` this perfgate cannot read (only 1 exists).
        """
        version = data.get("schema_version", SCHEMA_VERSION) if version is None else version
        if version != SCHEMA_VERSION:
            raise ValueError(f"unsupported schema_version {version!r} (this perfgate reads {SCHEMA_VERSION})")
        return super().from_json(data, version)

    @property
    def worker(self) -> WorkerRecord | None:
        """``environment.worker`` as a :class:`WorkerRecord` (None where the document has none)."""
        worker = (self.environment or {}).get("worker") if isinstance(self.environment, dict) else None
        return WorkerRecord.from_json(worker) if isinstance(worker, dict) else None
