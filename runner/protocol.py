"""The parent–worker protocol's messages, typed: one frozen dataclass per request and reply.

A leaf (standard library only), imported by both ends: the worker's request loop
(:mod:`runner.worker.serve`, :mod:`runner.worker.child`) reads requests with ``from_json`` and
answers with ``to_json``; the parent (:mod:`runner.pipeline.timing.workers`,
:mod:`runner.pipeline.timing.timing`) sends requests with ``to_json`` and reads replies with
``from_json``, so the parent still never imports the worker's code. The wire format is unchanged:
one JSON object per line, a request ``{cmd, ...fields}``, a reply ``{ok: true, ...fields}`` or
``{ok: false, error, skipped?, fatal?}`` (:class:`Failure`).

The worker runs the pull request's code, so a reply is untrusted input: ``from_json`` of a reply
checks every field's type and range (seconds finite and >= 0, counts integers >= 0) and raises
:class:`ProtocolError` naming the field, so what the parent builds results.json from is valid by
type (the parent's one check of a reply; results.json's own validation is at its edges).
The layout follows pyperf's ``Run._as_json`` / ``Run._json_load`` (psf/pyperf ``pyperf/_bench.py``):
a plain-data class that owns its JSON form in both directions.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any


#: How the cold-cache timer (``cold_cache``) evicts the L2 before each call, the buffer being
#: twice the L2: ``zero``, a write (``zero_()``, as ``triton.testing.do_bench`` and nvbench's
#: ``cudaMemsetAsync`` flush), whose dirty lines are written back *during* the next call's
#: interval — a constant added to both sides that dilutes a small memory-bound call's ratio (GPU
#: review #15); ``read``, a read of the buffer into one scalar (``sum()``), which leaves clean
#: lines, nothing to write back, and writes the previous call's dirty lines back during the flush.
L2_FLUSHES = ("zero", "read")
#: The flush the timer uses: do_bench's, so a cold time compares with Triton's own (the
#: ``overhead`` acceptance check) until a GPU measures ``read`` cleaner; results.json records it
#: (``settings.l2_flush``).
L2_FLUSH = "zero"


class ProtocolError(ValueError):
    """A message that breaks the protocol (a reply field of the wrong type or range)."""


def _plain(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def _seconds(data: dict, key: str, *, required: bool = False) -> float | None:
    """``data[key]`` as finite non-negative seconds (None when absent and not ``required``)."""
    value = data.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ProtocolError(f"{key}: not a number of seconds >= 0: {str(value)[:40]!r}")
    return float(value)


def _count(data: dict, key: str, *, minimum: int = 0, required: bool = False) -> int | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ProtocolError(f"{key}: not an integer >= {minimum}: {str(value)[:40]!r}")
    return value


def _text(data: dict, key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ProtocolError(f"{key}: not text")


def _mapping(data: dict, key: str) -> dict | None:
    value = data.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise ProtocolError(f"{key}: not an object")


def _series(data: dict, key: str, n: int, kind: type | tuple) -> list:
    """``data[key]`` cut or padded with None to ``n`` values of ``kind`` (or None)."""
    values = data.get(key) or []
    if not isinstance(values, list):
        raise ProtocolError(f"{key}: not a list")
    out = list(values[:n]) + [None] * (n - len(values))
    for v in out:
        if v is not None and (isinstance(v, bool) or not isinstance(v, kind)):
            raise ProtocolError(f"{key}: a value of the wrong type: {str(v)[:40]!r}")
    return out


def _absolute(path: str, what: str) -> None:
    """Refuse a relative ``path``: a worker runs in its side's worktree, not the parent's working
    directory, and the worktree is deleted after the compare — a relative trace path once lost
    every profile of the README's own demo (issue 47).

    Raises:
        ProtocolError: ``path`` is not absolute.
    """
    if not os.path.isabs(path):
        raise ProtocolError(f"{what} must be an absolute path (the worker runs in its side's "
                            f"worktree), got {path!r}")


# -- requests (parent → worker) -------------------------------------------------------------------
@dataclass(frozen=True)
class ListRequest:
    """``list`` (a child) or ``preload`` (the fork server): the cases under ``dir`` by the
    convention ``suite`` (None: perfgate's) with its configuration ``options``."""

    dir: str
    suite: str | None = None
    options: dict = field(default_factory=dict)
    cmd: str = "list"

    def __post_init__(self) -> None:
        _absolute(self.dir, "the benchmark directory")

    def to_json(self) -> dict:
        return {"cmd": self.cmd, "dir": self.dir, "suite": self.suite, "options": dict(self.options)}

    @classmethod
    def from_json(cls, data: dict) -> "ListRequest":
        return cls(data["dir"], data.get("suite"), dict(data.get("options") or {}), data.get("cmd") or "list")


@dataclass(frozen=True)
class SetupRequest:
    """``setup``: the case ``name`` (``file``, ``func``; the listed ``case`` when known) set up in
    the side's directory ``dir``. ``number`` calls per sample (None: calibrate to
    ``min_sample_time`` seconds), ``warmup_samples`` a fixed warm-up (None: adaptive, at most
    ``warmup_seconds``), ``cold_cache`` the L2 flushed before every call or not (None: as the
    convention's own harness times it, :attr:`runner.conventions.base.Prepared.cold_cache`). (The
    code map's ``trace`` request carries these fields too, with the
    repository ``root``: :mod:`runner.pipeline.mapping`.)"""

    dir: str
    file: str | None
    func: str | None
    name: str
    suite: str | None = None
    case: dict | None = None
    options: dict = field(default_factory=dict)
    min_sample_time: float = 0.0
    cold_cache: bool | None = None
    number: int | None = None
    warmup_samples: int | None = None
    warmup_seconds: float | None = None

    def __post_init__(self) -> None:
        _absolute(self.dir, "the benchmark directory")

    def to_json(self) -> dict:
        return {"cmd": "setup", **_plain(self)}

    @classmethod
    def from_json(cls, data: dict) -> "SetupRequest":
        names = {f.name for f in fields(cls)}
        given = {k: v for k, v in data.items() if k in names and v is not None}
        return cls(**{"file": None, "func": None, "name": "", **given, "dir": data["dir"],
                      "options": dict(data.get("options") or {})})


@dataclass(frozen=True)
class SampleRequest:
    """``sample``: ``count`` samples of ``number`` calls (None: the set-up's)."""

    count: int = 1
    number: int | None = None

    def to_json(self) -> dict:
        return {"cmd": "sample", "count": self.count, "number": self.number}

    @classmethod
    def from_json(cls, data: dict) -> "SampleRequest":
        number = data.get("number")
        return cls(int(data.get("count", 1)), int(number) if number else None)


@dataclass(frozen=True)
class MeasureRequest:
    """``measure``: after a pair's timing, torch.compile's facts and (``memory``) the peak memory
    of one call."""

    memory: bool = True

    def to_json(self) -> dict:
        return {"cmd": "measure", "memory": self.memory}

    @classmethod
    def from_json(cls, data: dict) -> "MeasureRequest":
        return cls(data.get("memory") is not False)


@dataclass(frozen=True)
class ProfileRequest:
    """``profile``: ``calls`` calls under torch.profiler, the Kineto trace written to ``trace_path``."""

    trace_path: str
    calls: int = 5

    def __post_init__(self) -> None:
        _absolute(self.trace_path, "the trace path")

    def to_json(self) -> dict:
        return {"cmd": "profile", "trace_path": self.trace_path, "calls": self.calls}

    @classmethod
    def from_json(cls, data: dict) -> "ProfileRequest":
        return cls(data["trace_path"], int(data.get("calls", 5)))


# -- replies (worker → parent) --------------------------------------------------------------------
@dataclass(frozen=True)
class Failure:
    """``{ok: false, error, skipped?, fatal?}``: the request failed (the benchmark's error text,
    or ``skipped``, the reason its suite skipped it)."""

    error: str
    skipped: str | None = None
    fatal: bool = False

    def to_json(self) -> dict:
        out: dict[str, Any] = {"ok": False, "error": self.error}
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.fatal:
            out["fatal"] = True
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Failure":
        skipped = data.get("skipped")
        return cls(str(data.get("error") or "failed"), None if skipped is None else str(skipped),
                   bool(data.get("fatal")))


def failure_of(data: dict) -> Failure | None:
    """The :class:`Failure` a reply carries, None when it is ``ok``."""
    return None if data.get("ok") else Failure.from_json(data)


def read_reply(data: dict, reply: type):
    """The ``reply`` type read from the answer ``data``, or its :class:`Failure`: the request
    failed, or the answer broke the protocol (:class:`ProtocolError`, the field named)."""
    failed = failure_of(data)
    if failed is not None:
        return failed
    try:
        return reply.from_json(data)
    except ProtocolError as exc:
        return Failure(f"the worker broke the protocol: {exc}")


@dataclass(frozen=True)
class Listing:
    """The reply to ``list``/``preload``: ``benchmarks`` (the cases, as the convention lists them:
    ``{name, file, func, ...}``), ``errors`` (``{file, error}``), ``skipped`` (``{name, file?,
    reason}``); a preload also says whether forking stays safe (``fork_safe``, else ``hazards``)."""

    benchmarks: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    fork_safe: bool = True
    hazards: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"ok": True, **_plain(self)}

    @classmethod
    def from_json(cls, data: dict) -> "Listing":
        for key in ("benchmarks", "errors", "skipped", "hazards"):
            if not isinstance(data.get(key) or [], list):
                raise ProtocolError(f"{key}: not a list")
        for case in data.get("benchmarks") or []:
            if not isinstance(case, dict) or not isinstance(case.get("name"), str):
                raise ProtocolError("benchmarks: a case without a name")
        return cls(list(data.get("benchmarks") or []), list(data.get("errors") or []),
                   list(data.get("skipped") or []), bool(data.get("fork_safe", True)), list(data.get("hazards") or []))


@dataclass(frozen=True)
class SetupReply:
    """The reply to ``setup``: ``number`` calls per sample, ``per_call`` warm seconds per call
    (the median of the last warm-up samples; ``estimate_s`` the calibration's), ``first_call_s``,
    ``warmup_calls`` and ``warmup_samples``, ``cold_cache`` whether each timed call ran after an L2
    flush (do_bench's device time per call) or back to back with warm caches; ``self_measured`` for
    a benchmark that measures itself (nothing was timed)."""

    number: int = 1
    per_call: float | None = None
    estimate_s: float | None = None
    first_call_s: float | None = None
    warmup_calls: int | None = None
    warmup_samples: int | None = None
    self_measured: bool = False
    cold_cache: bool = False

    def to_json(self) -> dict:
        if self.self_measured:
            return {"ok": True, "self_measured": True, "number": self.number}
        return {"ok": True, **_plain(self)}

    @classmethod
    def from_json(cls, data: dict) -> "SetupReply":
        return cls(_count(data, "number", minimum=1, required=True), _seconds(data, "per_call"),
                   _seconds(data, "estimate_s"), _seconds(data, "first_call_s"), _count(data, "warmup_calls"),
                   _count(data, "warmup_samples"), bool(data.get("self_measured")),
                   data.get("cold_cache") is True)

    @property
    def seconds_per_call(self) -> float | None:
        """Warm seconds per call, else the calibration's estimate (None when neither is known or 0)."""
        return self.per_call or self.estimate_s or None


@dataclass(frozen=True)
class SampleReply:
    """The reply to ``sample``: ``samples`` seconds per call, one per sample, and beside each its
    ``wall_s``/``cpu_s`` seconds, involuntary context ``switches``, ``others_busy`` and ``steal``
    (fractions; None where unknown), ``number`` calls per sample, ``peak_memory_bytes``; a
    benchmark that measures itself answers ``readings`` ``{name: {values, unit, direction}}``."""

    samples: tuple = ()
    wall_s: tuple = ()
    cpu_s: tuple = ()
    switches: tuple = ()
    others_busy: tuple = ()
    steal: tuple = ()
    number: int | None = None
    peak_memory_bytes: int | None = None
    readings: dict | None = None

    def to_json(self) -> dict:
        out = {"ok": True, **{k: list(v) if isinstance(v, tuple) else v for k, v in _plain(self).items()}}
        if self.readings is None:
            out.pop("readings")
        return out

    @classmethod
    def from_json(cls, data: dict) -> "SampleReply":
        samples = data.get("samples") or []
        if not isinstance(samples, list):
            raise ProtocolError("samples: not a list")
        values = tuple(_seconds({"samples": s}, "samples", required=True) for s in samples)
        n = len(values)
        readings = _mapping(data, "readings")
        for name, reading in (readings or {}).items():
            if not isinstance(reading, dict) or not isinstance(reading.get("values"), list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in reading["values"]):
                raise ProtocolError(f"readings: {str(name)[:40]!r} has no list of finite values")
        return cls(values, tuple(_series(data, "wall_s", n, (int, float))), tuple(_series(data, "cpu_s", n, (int, float))),
                   tuple(_series(data, "switches", n, int)), tuple(_series(data, "others_busy", n, (int, float))),
                   tuple(_series(data, "steal", n, (int, float))), _count(data, "number"),
                   _count(data, "peak_memory_bytes"), readings)


@dataclass(frozen=True)
class MeasureReply:
    """The reply to ``measure``: torch.compile's ``compile`` facts (None where nothing compiled)
    and the ``memory`` record of one call, or ``memory_error`` where measuring it failed."""

    compile: dict | None = None
    memory: dict | None = None
    memory_error: str | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"ok": True, "compile": self.compile}
        if self.memory is not None:
            out["memory"] = self.memory
        if self.memory_error is not None:
            out["memory_error"] = self.memory_error
        return out

    @classmethod
    def from_json(cls, data: dict) -> "MeasureReply":
        return cls(_mapping(data, "compile"), _mapping(data, "memory"), _text(data, "memory_error"))
