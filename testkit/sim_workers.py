"""Simulated workers and a simulated clock for the timing pass
(:class:`runner.pipeline.timing.timing.TimingPass`).

A :class:`SimWorker` answers the worker protocol's ``setup`` and ``sample`` requests the way
``runner.worker.serve`` does — the same calibration rule, the first call, an adaptive warm-up
bounded by ``warmup_seconds`` — from a model of the benchmark instead of running it, and moves the
:class:`SimClock` on by what each request would have taken. So the parent's decisions (calls per
sample, rounds per pair, looks, budget, futility, disturbed rounds) run as in a compare, over
hours of simulated timing in milliseconds, with the truth known.

Model of one side of one benchmark: seconds per call ``per_call`` × a factor per process
(log-normal, ``process_sd``) × a factor per sample (log-normal, ``sample_sd``); a fraction
``disturbed`` of the samples lose ``steal`` of their wall time to another task (the process gets
less CPU than wall time and is switched out, as ``runner.worker.sampling.Sample`` records); a
fraction ``throttled`` of the samples run on a GPU held down by power (``throttle_slowdown`` times
slower), which :class:`SimTelemetry` reports as NVML would (a power clock-event reason, a lower SM
clock, the power violation counter moving). The ``measure`` request answers ``memory`` bytes (a
factor per process, log-normal ``memory_sd``; none where None) and the ``compile`` facts given.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


class SimClock:
    """Monotonic seconds that move only when a simulated worker works."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


@dataclass
class SideModel:
    """One side of one benchmark (see the module docstring); ``per_call`` in seconds."""

    per_call: float
    process_sd: float = 0.005
    sample_sd: float = 0.01
    first_call: float = 2.0
    disturbed: float = 0.0
    steal: float = 0.3
    fails_setup: bool = False
    throttled: float = 0.0
    throttle_slowdown: float = 1.3
    memory: int | None = None
    memory_sd: float = 0.0
    compile: dict | None = None
    #: calls during set-up (calibration, warm-up) take this many times longer: a calibration
    #: another task disturbed, as on a loaded runner
    setup_slowdown: float = 1.0
    #: another task's bursts arrive at this rate (per second of a sample's wall time) and each
    #: takes ``burst_s`` seconds of it: a longer sample is hit more often
    burst_rate: float = 0.0
    burst_s: float = 0.0
    #: a process's ``k``-th call takes ``1 + cold_factor·exp(−k/cold_calls)`` times longer: caches,
    #: allocator thresholds and pools settling over its first calls (a warm-up to steady state)
    cold_factor: float = 0.0
    cold_calls: float = 1.0
    #: ... and ``exp(drift·k)`` times longer: a process that never settles
    drift: float = 0.0
    #: every process forked from one layout's server is this much slower or faster (log-normal,
    #: drawn once per layout and benchmark: the layout effect of runner.pipeline.machine.layouts)
    layout_sd: float = 0.0
    #: seconds every sample hangs before it answers (a deadlock: ``inf``-like values)
    sample_hang: float = 0.0


class SimTelemetry:
    """NVML as the simulated GPU would answer it: one sample in the middle of every simulated
    sample (``t`` on the :class:`SimClock`), a power cap (reason bit 0x4, SM clock 1600 MHz
    instead of 1980, the power violation counter moving) while a throttled sample runs.
    ``reasons`` False leaves the reason bits out (an NVML that only keeps the counters)."""

    def __init__(self, reasons: bool = True):
        self.samples: list[dict] = []
        self.reasons = reasons
        self._violation = 0
        self.side: str | None = None

    def set_side(self, side: str | None) -> None:
        self.side = side

    def record(self, t0: float, t1: float, throttled: bool) -> None:
        before = self._violation
        if throttled:
            self._violation += int((t1 - t0) * 1e9)
        self.samples.append({"t": (t0 + t1) / 2, "side": self.side, "sm_clock_mhz": 1600 if throttled else 1980,
                             "reasons": (0x4 if throttled else 0) if self.reasons else None,
                             "power_violation_ns": before if not throttled else self._violation})


@dataclass
class SimWorker:
    """One side's worker: ``models`` maps a benchmark name to its :class:`SideModel`."""

    clock: SimClock
    models: dict[str, SideModel]
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    telemetry: SimTelemetry | None = None
    children_started: int = 0
    requests: list[tuple[str, dict]] = field(default_factory=list)
    #: per ``measure`` request, whether memory was asked for
    measures_taken: list[bool] = field(default_factory=list)
    #: what measuring memory costs, in calls (runner.measures.MEMORY_COST_CALLS: CPU tracing)
    memory_cost_calls: float = 20.0
    _model: SideModel | None = None
    _factor: float = 1.0
    _number: int = 1
    #: calls the current process has made (its warm-up state)
    _calls: int = 0
    #: the current layout, those started, and what starting a layout's server costs (seconds)
    layout: int = 0
    layouts_started: set = field(default_factory=lambda: {0})
    server_start: float = 0.0
    #: a layout's factor per benchmark, drawn once (log-normal, the model's ``layout_sd``)
    _layout_factors: dict = field(default_factory=dict)

    def end_child(self) -> None:
        self._model = None

    def use_layout(self, layout: int) -> float:
        """The fork server of ``layout`` (runner.pipeline.machine.layouts): its processes carry that
        layout's factor (``layout_sd``); starting one costs ``server_start`` seconds, once."""
        self._model = None
        self.layout = layout
        if layout in self.layouts_started:
            return 0.0
        self.layouts_started.add(layout)
        self.clock.advance(self.server_start)
        return self.server_start

    def _call_time(self, slowdown: float = 1.0, advance: float = 1.0) -> float:
        """One call's seconds; it stands for ``advance`` calls of the process (a sample's calls are
        drawn by at most 50 representatives)."""
        m, k = self._model, self._calls
        self._calls += advance
        warm = (1.0 + m.cold_factor * math.exp(-k / m.cold_calls)) * math.exp(m.drift * k)
        return m.per_call * self._factor * slowdown * warm * math.exp(self.rng.gauss(0.0, m.sample_sd))

    def request(self, cmd: str, timeout: float | None = None, **fields) -> dict:
        self.requests.append((cmd, fields))
        if cmd in ("setup", "sample"):
            t0 = self.clock.now
            resp = self._setup(fields) if cmd == "setup" else self._sample(fields)
            if timeout is not None and self.clock.now - t0 > timeout:  # the parent kills it, as workers.py does
                self.clock.now = t0 + timeout
                self._model = None
                from runner.pipeline.timing.workers import WorkerFailure
                raise WorkerFailure(f"timed out after {timeout:g} s (worker killed and restarted)")
            return resp
        if cmd == "profile":
            self.clock.advance(5 * self._model.per_call + 0.5)
            return {"ok": True}
        if cmd == "measure":
            assert self._model is not None, "measure before setup"
            m = self._model
            self.measures_taken.append(fields.get("memory") is not False)
            if fields.get("memory") is False:  # the parent's budget rule: compile facts only
                return {"ok": True, "compile": m.compile}
            self.clock.advance(m.per_call * self.memory_cost_calls)  # runner.worker.measures.measure_memory
            memory = None if m.memory is None else {
                "kind": "cpu", "peak_bytes": int(m.memory * math.exp(self.rng.gauss(0.0, m.memory_sd))), "rss_bytes": None}
            return {"ok": True, "memory": memory, "compile": m.compile}
        if cmd == "output":
            # untimed calls whose return value is None, as a benchmark that returns nothing
            # (runner.worker.outputs.summarize(None)): compared as "not_compared"
            assert self._model is not None, "output before setup"
            calls = int(fields.get("calls", 1))
            self.clock.advance(calls * self._model.per_call)
            none = {"leaves": [], "skipped": [{"path": "", "type": "NoneType"}], "truncated": False}
            return {"ok": True, "summaries": [none] * calls}
        raise AssertionError(f"unexpected request {cmd}")

    def _setup(self, req: dict) -> dict:
        self.children_started += 1
        model = self.models[req["name"]]
        if model.fails_setup:
            return {"ok": False, "error": "ValueError: cannot be set up"}
        self._model = model
        self._calls = 0
        key = (req["name"], self.layout)
        if key not in self._layout_factors:
            self._layout_factors[key] = math.exp(self.rng.gauss(0.0, model.layout_sd)) if model.layout_sd else 1.0
        self._factor = math.exp(self.rng.gauss(0.0, model.process_sd)) * self._layout_factors[key]
        first = self._call_time(model.setup_slowdown) * model.first_call
        self.clock.advance(first)
        min_sample = float(req["min_sample_time"])
        warm: list[float] = []
        if req.get("number"):
            number = int(req["number"])
        else:  # the worker's calibrate(): grow the count until a sample lasts min_sample_time
            number = 1
            while True:
                t = sum(self._call_time(model.setup_slowdown, number / min(number, 50))
                        for _ in range(min(number, 50))) * (number / min(number, 50))
                self.clock.advance(t)
                if t >= min_sample or number >= 1_000_000:
                    break
                number = max(number + 1, min(number * 10, int(number * 1.2 * min_sample / t) + 1))
            warm = [t / number]
        fixed = req.get("warmup_samples")
        if fixed is not None:
            for _ in range(int(fixed)):
                t = self._call_time(model.setup_slowdown, number) * number
                self.clock.advance(t)
                warm.append(t / number)
        else:  # adaptive, bounded by warmup_seconds (runner.worker.sampling.warm_up)
            limit, spent = float(req.get("warmup_seconds") or 1.0), 0.0
            while len(warm) < 3 and not (warm and spent + warm[-1] * number > limit):
                t = self._call_time(model.setup_slowdown, number) * number
                self.clock.advance(t)
                spent += t
                warm.append(t / number)
        if not req.get("number") and warm:
            tail = sorted(warm[-3:])
            per = tail[len(tail) // 2]
            if per * number < min_sample:
                number = max(number, math.ceil(1.2 * min_sample / per))
        self._number = number
        tail = sorted(warm[-3:])
        return {"ok": True, "number": number, "warmup_calls": round(self._calls), "warmup_samples": len(warm),
                "per_call": tail[len(tail) // 2] if tail else None, "first_call_s": first}

    def _sample(self, req: dict) -> dict:
        assert self._model is not None, "sample before setup"
        number = int(req.get("number") or self._number)
        calls = min(number, 50)
        busy = sum(self._call_time(advance=number / calls) for _ in range(calls)) * (number / calls)
        throttled = self._model.throttled > 0 and self.rng.random() < self._model.throttled
        if throttled:
            busy *= self._model.throttle_slowdown
        wall, cpu, switches = busy, busy, 0
        if self.rng.random() < self._model.disturbed:
            wall = busy / (1.0 - self._model.steal)  # another task had the CPU for the rest
            switches = 3
        if self._model.burst_rate and self.rng.random() < 1.0 - math.exp(-self._model.burst_rate * busy):
            wall += self._model.burst_s
            switches = 3
        t0 = self.clock.now
        self.clock.advance(wall + self._model.sample_hang)
        if self.telemetry is not None:
            self.telemetry.record(t0, self.clock.now, throttled)
        return {"ok": True, "samples": [wall / number], "wall_s": [wall], "cpu_s": [cpu], "switches": [switches],
                "number": number, "peak_memory_bytes": None}


def sim_pass(models: dict[str, tuple[SideModel, SideModel]], cfg, seed: int = 0, threads: int | None = 1,
             telemetry: SimTelemetry | None = None, locked_sm_mhz: float | None = None):
    """A TimingPass over simulated workers (and, when given, their simulated NVML telemetry);
    returns ``(pass, states, clock, workers)``."""
    from runner.pipeline.timing.benchstate import BenchState
    from runner.pipeline.timing.timing import TimingPass

    clock = SimClock()
    rng = random.Random(seed)
    workers = {side: SimWorker(clock, {name: pair[i] for name, pair in models.items()}, random.Random(rng.random()),
                               telemetry)
               for i, side in enumerate(("base", "head"))}
    session = TimingPass(workers, cfg, {"base": "/b", "head": "/h"}, clock=clock, threads=threads,
                         telemetry=telemetry, locked_sm_mhz=locked_sm_mhz)
    states = [BenchState(case={"name": name, "file": "bench_sim.py", "func": name}) for name in models]
    return session, states, clock, workers
