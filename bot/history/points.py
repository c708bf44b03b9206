"""Regression history's points (pure): a result's environment fingerprint and the points each of
its benchmarks gives, one per measure (:mod:`bot.history` names the terms)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass

from runner import results as results_schema

_REPOSITORY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")

#: What a point measures, and its unit: ``time`` seconds per call, ``memory`` peak bytes (a side's
#: ``memory.peak_bytes``, runner.measures), ``compile`` seconds torch.compile took to compile the
#: first call, cold (a side's ``compile.compile_s``, where the benchmark compiles).
MEASURES = {"time": "s", "memory": "B", "compile": "s"}


def is_repository_name(text: str) -> bool:
    """True for ``owner/name`` as GitHub spells repositories."""
    return bool(_REPOSITORY_RE.match(text or ""))


# --------------------------------------------------------------------------- fingerprints

@dataclass(frozen=True)
class Fingerprint:
    """What must be equal for two measurements to belong to one series.

    ``gpu``: the device model (``environment.device_name``; on CPU ``"cpu: <cpu>"``);
    ``driver``, ``cuda``, ``torch``: versions; ``runner_label``: the self-hosted runner label
    (``environment.runner_label``, else ``environment.runner`` as a string or ``{label}``).
    """

    gpu: str | None
    driver: str | None
    cuda: str | None
    torch: str | None
    runner_label: str | None

    @property
    def key(self) -> str:
        """16 hex digits of SHA-256 over the canonical JSON of the five fields."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        """A short human label, e.g. ``NVIDIA H200 · driver 550.54 · CUDA 12.4 · torch 2.5.1 · gpu-h200``."""
        parts = [self.gpu or "unknown device"]
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.cuda:
            parts.append(f"CUDA {self.cuda}")
        if self.torch:
            parts.append(f"torch {self.torch}")
        if self.runner_label:
            parts.append(self.runner_label)
        return " · ".join(parts)

    def as_dict(self) -> dict:
        return {**asdict(self), "key": self.key, "label": self.label}


def _text(value) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def fingerprint_of(environment: dict) -> Fingerprint:
    """The :class:`Fingerprint` of a results.json ``environment`` object."""
    env = environment or {}
    device = (env.get("device") or "").lower()
    gpu = _text(env.get("device_name"))
    if device == "cpu" or (gpu is None and device != "cuda"):
        gpu = f"cpu: {_text(env.get('cpu')) or gpu or 'unknown'}"
    runner = env.get("runner_label") or env.get("runner")
    if isinstance(runner, dict):
        runner = runner.get("label") or runner.get("name")
    return Fingerprint(gpu=gpu, driver=_text(env.get("driver")), cuda=_text(env.get("cuda")),
                       torch=_text(env.get("torch")), runner_label=_text(runner))


# --------------------------------------------------------------------------- points

def parse_time(text: str | None) -> _dt.datetime | None:
    """ISO-8601 (``Z`` or offset; naive is taken as UTC) → aware UTC ``datetime``, or None."""
    if not text:
        return None
    try:
        value = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.astimezone(_dt.timezone.utc)


def iso(value: _dt.datetime | None) -> str | None:
    """Aware datetime → ``2026-01-02T03:04:05Z`` (UTC, seconds)."""
    if value is None:
        return None
    return value.astimezone(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class PointRecord:
    """One benchmark value extracted from a results document (before it is stored)."""

    benchmark: str
    kind: str                 # "main" | "pr" | "compare"
    sha: str | None
    value: float              # seconds per call (median)
    ci_low: float | None
    ci_high: float | None
    ratio: float | None       # head/base of a compare, else None
    verdict: str | None
    measure: str = "time"     # a key of MEASURES


def result_kind(doc: dict) -> str:
    """``run`` for a single-revision result (``base`` is null), else ``compare``."""
    return "run" if doc.get("base") is None else "compare"


def pull_request_of(doc: dict) -> dict | None:
    """The optional top-level ``pull_request`` ``{number, url, title?, merge_commit_sha?, merged_at?}``.

    Returns None when absent or without an integer ``number``.
    """
    pr = doc.get("pull_request")
    if not isinstance(pr, dict):
        return None
    number = pr.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        return None
    return pr


def points_of(doc: dict) -> list[PointRecord]:
    """The history points of a (valid) results.json document: per benchmark, its time, memory and
    compile points (:func:`_time_point`, :func:`_memory_point`, :func:`_compile_point`).

    A ``run`` result gives ``main`` points from each benchmark's ``head``; a ``compare`` result
    gives its head medians as ``pr`` points when the document names a PR, else as ``compare``
    points. Benchmarks whose head failed or has no median are skipped, and so are those that
    report a unit other than seconds, a throughput ``X/s`` or memory. A ``perfgate bisect``
    document (its ``bisect`` section) gives no point at all: it is a search, kept for its run page.
    """
    if doc.get("bisect") is not None:
        return []
    kind = result_kind(doc)
    point_kind = "pr" if pull_request_of(doc) else ("main" if kind == "run" else "compare")
    sha = (doc.get("head") or {}).get("sha")
    out = []
    for bench in doc.get("benchmarks") or []:
        head = results_schema.side_of(bench, "head")
        value = head.get("median")
        if head.get("error") or value is None or not (value > 0) or math.isinf(value):
            continue
        unit = bench.get("unit") or "s"
        throughput = results_schema.direction_of(bench) == "bigger" and unit.endswith("/s")
        if not throughput and unit != "s" and not results_schema.is_memory_valued(bench):
            continue  # the history keeps times and memory; other measures are in the report only
        change = results_schema.change_of(bench)
        found = (_time_point(bench, head, change), _memory_point(head, change),
                 _compile_point(head, change))
        out += [PointRecord(benchmark=bench["name"], kind=point_kind, sha=sha, **fields)
                for fields in found if fields is not None]
    return out


def _time_point(bench: dict, head: dict, change: dict) -> dict | None:
    """The time point's fields: the head's median seconds per call with the interval the runner
    stored (None when the document has none: nothing is recomputed). A bigger-is-better
    throughput (``direction: bigger``, a unit ``X/s``) gives the time per X (the reciprocal, its
    interval inverted), so its change points and alerts read as every other series'; None for
    another unit (``MB``, a score; memory-valued ones give only their memory point)."""
    value, low, high = head.get("median"), head.get("ci_low"), head.get("ci_high")
    unit = bench.get("unit") or "s"
    bigger = results_schema.direction_of(bench) == "bigger"
    if bigger and unit.endswith("/s"):
        value = 1.0 / value
        low, high = (1.0 / high if high else None), (1.0 / low if low else None)
    if not (unit == "s" or bigger):
        return None
    return {"value": float(value), "ci_low": low, "ci_high": high, "ratio": change.get("ratio"),
            "verdict": change.get("verdict")}


def _memory_point(head: dict, change: dict) -> dict | None:
    """The memory point's fields where the head's peak was measured (``memory.peak_bytes`` > 0):
    the median over its processes (bytes), their range as the interval, the memory change's ratio
    and verdict; else None."""
    memory = head.get("memory") if isinstance(head.get("memory"), dict) else {}
    peak = memory.get("peak_bytes")
    if not (isinstance(peak, int) and peak > 0):
        return None
    spread = [v for v in memory.get("processes") or [] if isinstance(v, int)]
    mem_change = change.get("memory") if isinstance(change.get("memory"), dict) else {}
    return {"value": float(peak), "ci_low": float(min(spread)) if spread else None,
            "ci_high": float(max(spread)) if spread else None, "ratio": mem_change.get("ratio"),
            "verdict": mem_change.get("verdict"), "measure": "memory"}


def _compile_point(head: dict, change: dict) -> dict | None:
    """The compile point's fields where the head compiled (``compile.compile_s`` > 0): the first
    call's cold compile seconds, the median over its processes with their range, the
    compile-time change's ratio; else None."""
    compiled = head.get("compile") if isinstance(head.get("compile"), dict) else {}
    seconds = compiled.get("compile_s")
    if not (isinstance(seconds, (int, float)) and seconds > 0 and math.isfinite(seconds)):
        return None
    spread = [float(v) for v in compiled.get("compile_s_values") or []
              if isinstance(v, (int, float))]
    timing = ((change.get("compile") or {}).get("compile_s")
              if isinstance(change.get("compile"), dict) else None)
    return {"value": float(seconds), "ci_low": min(spread) if spread else None,
            "ci_high": max(spread) if spread else None, "ratio": (timing or {}).get("ratio"),
            "verdict": None, "measure": "compile"}
