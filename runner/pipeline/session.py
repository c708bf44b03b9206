"""What a compare and a run share: their configuration and checkouts, their sides opened, their
benchmarks chosen and timed.

:func:`configuration` reads the maintainers' configuration and :func:`install` runs its install
command in each checkout; :func:`bench_dirs` finds each side's benchmark directory and the
convention (:mod:`.suites`); :func:`open_sides` runs the doctor before any worker starts, starts
one worker per side under the same conditions (:func:`.workers.start_workers`), lists the
benchmarks (each side's fork server imports them once; the listing is checked by type,
:mod:`runner.protocol`) and asks each worker for its environment; :class:`Sides` holds what it
found (and :meth:`Sides.listed` what is measured of it) and closes the workers.
:func:`time_in_pairs` (a compare, its GPU clocks held and watched, :mod:`.clocks`,
:mod:`.telemetry`) and :func:`time_one_side` (a run) time the benchmarks in one
:class:`.timing.TimingPass`: those that measure themselves first (:class:`.measured.MeasuredPass`,
within their share of the budget by count, :func:`.schedule.measured_share`), then the timed
ones. The imperative shell: what it measures is :mod:`runner.selection`'s, for how long
:mod:`.schedule`'s and :mod:`.stops`'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .. import config as config_mod
from .. import selection
from ..config import Config
from ..environment import capture
from ..errors import UserError
from ..protocol import Listing, ProtocolError
from .timing import benchstate, schedule, stops
from .machine import clock_plan, conditions
from . import suites
from .timing.benchstate import BenchState
from .machine.clocks import ClockControl
from .machine.machine_facts import examine
from .timing.measured import MeasuredPass
from .timing.pairs import Progress
from .progress_record import ProgressRecord
from .revisions import Checkouts, Revision
from .machine.telemetry import TelemetrySampler
from .timing.timing import TimingPass
from .timing.workers import WorkerFailure, WorkerProcess, start_workers

#: The order the sides are listed and asked in (head's listing is the one measured).
HEAD_FIRST = {"head": 0, "base": 1}


def configuration(config_file: str | None, overrides: dict, rev: Revision) -> Config:
    """The maintainers' configuration: ``--config FILE``, else the one ``rev`` (a compare's base,
    never its head) holds, with the command line's ``overrides``.

    Raises:
        UserError: a broken configuration.
    """
    cfg = config_mod.load_file(config_file) if config_file else config_mod.load(rev.path)[0]
    return cfg.override(**overrides)


def install(co: Checkouts, revs: dict[str, Revision], command: str, progress: Progress,
            record: ProgressRecord | None = None) -> float:
    """Run the configuration's install ``command`` in each checkout of ``revs``; its seconds
    (each side noted in the compare's progress ``record``).

    Raises:
        UserError: the command failed.
    """
    seconds = 0.0
    for rev in revs.values():
        progress.phase(f"installing {rev.side} ({rev.sha[:12]}): {command}")
        if record is not None:
            record.note("install", rev.side)
        t0 = time.monotonic()
        co.install(rev, command)
        seconds += time.monotonic() - t0
    return seconds


def bench_dirs(given: str | None, cfg: Config, revs: dict[str, Revision]) -> dict:
    """``{<side>: directory, …, shared, suite}``: each side's benchmark directory and the
    suite's convention (:mod:`.suites`, decided on the head revision, the directory the same on
    every side), or ``given`` (``--benchmarks DIR``) shared by the sides.

    Raises:
        UserError: ``given`` is no directory, or head has no benchmark directory.
    """
    if given:
        path = Path(given).expanduser().resolve()
        if not path.is_dir():
            raise UserError(f"--benchmarks {given}: no such directory")
        return {**{side: str(path) for side in revs}, "shared": True,
                "suite": suites.detect_in(path, cfg.suite, cfg)}
    head = revs["head"]
    suite = suites.detect(head.path, cfg.suite, cfg.benchmarks, cfg)
    if not (head.path / suite.directory).is_dir():
        raise UserError(f"no benchmark directory {suite.directory!r} at head {head.sha[:12]} "
                        f"(set `benchmarks` in [tool.perfgate] or pass --benchmarks DIR)")
    return {**{side: str(rev.path / suite.directory) for side, rev in revs.items()},
            "shared": False, "suite": suite.kind}


@dataclass
class Sides:
    """The workers of one compare or run, opened (:func:`open_sides`): ``workers`` by side and
    their ``conditions`` (``environment.worker``), each side's ``listings`` (None: no benchmark
    directory on that side) and ``env`` (its worker's answer: device, versions, CPUs, threads),
    the convention's ``options`` and the ``doctor``'s record, taken before the workers started."""

    workers: dict[str, WorkerProcess]
    conditions: dict
    listings: dict[str, dict | None]
    env: dict[str, dict]
    options: dict
    doctor: dict

    @property
    def gpu_uuid(self) -> str | None:
        """The workers' GPU as NVML names it (:func:`.machine.conditions.workers_gpu`), for the
        clocks and the telemetry; kept out of results.json (a machine's serial, not a result)."""
        return conditions.workers_gpu([self.env.get(side) or {} for side in self.workers])

    def record(self) -> dict:
        """``environment.worker.sides``: each side's processes, preload, and its CPUs and torch
        threads as its worker saw them (taken out of ``env``, which then describes the machine)."""
        return {side: {"processes": w.children_started,
                       "preloaded": bool(w.preload_dir) and not w.preload_refused,
                       "preload_refused": w.preload_refused or None,
                       "cpus": self.env[side].pop("cpus", None),
                       "torch_threads": self.env[side].pop("threads", None)}
                for side, w in self.workers.items()}

    def environment(self, telemetry: dict | None) -> dict:
        """results.json's ``environment``: head's worker's (:func:`runner.environment.capture`,
        with the ``telemetry`` summary), its conditions and sides (:meth:`record`), the doctor's."""
        sides = self.record()
        for side in self.env:
            self.env[side].pop("gpu_uuid", None)
        environment = capture(self.env.get("head"), telemetry)
        environment["worker"] = {**self.conditions, "sides": sides,
                                 "timer": conditions.timer_description(environment.get("device"))}
        environment["doctor"] = self.doctor
        return environment

    def listed(self, dirs: dict, pattern: str | None,
               names: list[str] | None = None) -> selection.Listed:
        """What is measured of the listings (:func:`runner.selection.listed`).

        Raises:
            UserError: nothing to measure, skip or report
                (:func:`runner.selection.nothing_listed`).
        """
        head = self.listings["head"]
        found = selection.listed(head, self.listings.get("base"), pattern, names,
                                 shared=dirs["shared"])
        problem = selection.nothing_listed(found, head, pattern, dirs["head"],
                                           suites.looked_for(dirs["suite"]))
        if problem is not None:
            raise UserError(problem)
        return found

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()


def open_sides(revs: dict[str, Revision], dirs: dict, cfg: Config, out: Path,
               progress: Progress, record: ProgressRecord | None = None) -> Sides:
    """The doctor's checks (before the workers: the GPU idle, nothing of ours on it), then a
    worker per side of ``revs`` (logs under ``out/logs``), each side's benchmarks listed where
    its directory exists (head's always does: :func:`bench_dirs`), each worker's environment;
    each request to a worker noted in the compare's progress ``record``.

    Raises:
        UserError: a side's benchmarks could not be listed or its worker could not start (the
            workers are closed).
    """
    doctor = examine([out])
    workers, conditions = start_workers(revs, cfg, out / "logs")
    for worker in workers.values() if record is not None else ():
        worker.on_request = record.note
    try:
        progress.phase("starting workers")
        options = suites.options(dirs["suite"], cfg)
        order = sorted(workers, key=HEAD_FIRST.__getitem__)
        listings = {side: list_benchmarks(workers[side], dirs[side], dirs["suite"], options)
                    if Path(dirs[side]).is_dir() else None for side in order}
        env = {side: _environment(side, workers[side]) for side in order}
    except BaseException:
        for worker in workers.values():
            worker.close()
        raise
    return Sides(workers, conditions, listings, env, options, doctor)


def _environment(side: str, worker: WorkerProcess) -> dict:
    """The worker's ``env`` answer (its child then ended).

    Raises:
        UserError: the worker could not start.
    """
    try:
        answer = worker.request("env")
    except WorkerFailure as exc:
        raise UserError(f"the {side} worker could not start: {exc}") from None
    if not answer.get("ok"):
        raise UserError(f"the {side} worker could not start: {answer.get('error')}")
    worker.end_child()
    return answer


def list_benchmarks(worker: WorkerProcess, directory: str, suite: str,
                    options: dict | None = None) -> dict:
    """List the benchmarks under ``directory`` (convention ``suite``, with its ``options``) and
    import them into the side's fork server.

    Raises:
        UserError: the files could not even be listed (the server died or hung importing them).
    """
    try:
        listing = worker.preload(directory, suite, options)
    except WorkerFailure as exc:
        raise UserError(f"cannot list benchmarks in {directory}: {exc}") from None
    if not listing.get("ok"):
        raise UserError(f"cannot list benchmarks in {directory}: {listing.get('error')}")
    try:
        Listing.from_json(listing)  # the worker ran the benchmarks' code: its listing is checked
    except ProtocolError as exc:
        raise UserError(f"cannot list benchmarks in {directory}: the worker broke the protocol: "
                        f"{exc}") from None
    return listing


@dataclass
class BudgetClock:
    """When a compare's budget started (monotonic seconds, moved on by the install's time) and
    where its seconds went (``settings.budget``)."""

    start: float
    install_s: float = 0.0
    startup_s: float = 0.0
    timing_s: float = 0.0
    profile_s: float = 0.0

    def record(self, max_time: float, states: list[BenchState], unprofiled: list[str]) -> dict:
        spent = time.monotonic() - self.start
        return {"max_time": max_time, "spent_s": round(spent, 3),
                "install_s": round(self.install_s, 3), "startup_s": round(self.startup_s, 3),
                "timing_s": round(self.timing_s, 3), "profile_s": round(self.profile_s, 3),
                "cut_short": [s.name for s in states if stops.cut_short(s.verdict, s.budget_cut)],
                "unprofiled": unprofiled}


def time_in_pairs(cfg: Config, sides: Sides, dirs: dict, states: list[BenchState],
                  progress: Progress,
                  clock: BudgetClock) -> tuple[TimingPass, dict, schedule.Budget]:
    """A compare's timing: the GPU's clocks held as :mod:`.clock_plan` says and watched
    (:class:`.clocks.ClockControl`, :class:`.telemetry.TelemetrySampler`, both undone before it
    returns), within the budget's timing share (:func:`.schedule.split_budget`): the benchmarks
    that measure themselves first (:func:`_measured_end`), then the timed ones in process pairs
    (:meth:`.timing.TimingPass.time_all`), then Benjamini–Hochberg across every benchmark of the
    run. Returns the pass (for the profiles), the telemetry summary with its ``clocks`` record,
    and the budget."""
    device, uuid = sides.env["head"].get("device"), sides.gpu_uuid
    telemetry = TelemetrySampler(device_uuid=uuid)
    clocks = ClockControl(cfg.lock_clocks, cfg.lock_clocks_mhz, device=device, uuid=uuid)
    record = clocks.start()
    try:
        timing = TimingPass(sides.workers, cfg, {side: dirs[side] for side in sides.workers},
                            telemetry=telemetry, progress=progress,
                            threads=conditions.intra_op_threads(sides.env["head"]), device=device,
                            options=sides.options, locked_sm_mhz=clock_plan.locked_sm_mhz(record))
        timed, measured = benchstate.partition(states)
        timing_start = time.monotonic()
        clock.startup_s = timing_start - clock.start
        budget = schedule.split_budget(clock.start, cfg.max_time, timing_start, cfg.profile)
        telemetry.start()
        try:
            MeasuredPass(timing).run(measured,
                                     _measured_end(budget.timing_end, measured, states))
            timing.time_all(timed, end=budget.timing_end)
            timing.finalize(states)
        finally:
            telemetry.stop()
    finally:
        clocks.restore()  # before profiling: the locked clocks were for the timing pass
    clock.timing_s = time.monotonic() - timing_start
    summary = telemetry.summary()
    summary["clocks"] = dict(clocks.record)
    return timing, summary, budget


def time_one_side(cfg: Config, sides: Sides, dirs: dict, states: list[BenchState],
                  progress: Progress, end: float, samples: int) -> TimingPass:
    """A run's timing on its one side, by ``end`` (monotonic seconds): the benchmarks that measure
    themselves first, within their share (:func:`_measured_end`,
    :meth:`.measured.MeasuredPass.run_one_side`), then the timed ones with what is left, each
    ``samples`` samples (:meth:`.timing.TimingPass.time_one_side`). Returns the pass."""
    timing = TimingPass(sides.workers, cfg, {"head": dirs["head"]}, progress=progress,
                        device=sides.env["head"].get("device"), options=sides.options)
    timed, measured = benchstate.partition(states)
    MeasuredPass(timing).run_one_side(measured, _measured_end(end, measured, states), samples)
    timing.time_one_side(timed, end, samples)
    return timing


def _measured_end(end: float, measured: list[BenchState], states: list[BenchState]) -> float:
    """When the benchmarks that measure themselves must be done
    (:func:`.schedule.measured_share`)."""
    return schedule.measured_share(end, time.monotonic(), len(measured), len(states))
