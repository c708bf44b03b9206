"""The compare pipeline: refs → worktrees → workers → paired sampling → verdicts → profiles → results.

``compare()`` is the orchestration (the imperative shell); every decision it takes is made by
a pure function elsewhere: the stopping rule and verdicts in :mod:`runner.stats`, names and
filters in :mod:`runner.discovery`, hints in :mod:`runner.hints`, intent in :mod:`runner.intent`.

Schedule. Benchmarks are taken one after another. For each, both workers set it up
(warm-up, calibration), then rounds alternate the order base-head, head-base (ABBA) so each
base sample has an adjacent head sample. At each planned look (runner.stats.look_schedule)
the estimate is tested and the benchmark stops when decided; each look's new rounds run in a
fresh pair of workers, and the pairs are combined with a random-effects model
(runner.stats.blocked_estimate), so process-level effects widen the interval instead of
passing for a change. Each benchmark may spend its
fair share of what is left of ``max_time``; benchmarks still inconclusive after the first pass
continue their looks with whatever budget remains.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from . import results as results_mod
from . import stats
from .config import Config
from .discovery import matches
from .doctor import examine
from .environment import capture
from .errors import UserError
from .manager import WorkerFailure, WorkerProcess, start_workers
from .sampling import timer_description
from .revisions import Checkouts, Revision, repo_root, resolve


class Progress(Protocol):
    """What the pipeline tells its caller while it runs (a rich progress bar, or nothing)."""

    def phase(self, text: str) -> None: ...
    def start(self, total: int) -> None: ...
    def benchmark(self, index: int, name: str) -> None: ...
    def rounds(self, name: str, rounds: int, estimate: "stats.Estimate | None") -> None: ...
    def finished(self, name: str, verdict: str) -> None: ...


class NoProgress:
    """A silent :class:`Progress`."""

    def phase(self, text): pass
    def start(self, total): pass
    def benchmark(self, index, name): pass
    def rounds(self, name, rounds, estimate): pass
    def finished(self, name, verdict): pass


@dataclass
class PullRequestText:
    """What the PR says about itself (for intent); empty fields mean "use the commits"."""

    title: str = ""
    body: str = ""
    labels: list[str] = field(default_factory=list)

    def given(self) -> bool:
        return bool(self.title or self.body or self.labels)


@dataclass
class SideState:
    """One side of one benchmark during the timing pass.

    ``samples`` are seconds per call in round order; ``number`` is the calls per sample this
    side took (the benchmark's, :attr:`BenchState.number`), ``warmup_samples`` the warm-up its
    later process pairs take (from its first pair).
    """

    samples: list[float] = field(default_factory=list)
    error: str | None = None
    peak: int | None = None
    number: int | None = None
    warmup_samples: int | None = None
    warmup_calls: int | None = None

    def info(self) -> dict:
        return {k: v for k, v in (("number", self.number), ("warmup_calls", self.warmup_calls)) if v is not None}


@dataclass
class BenchState:
    """Mutable state of one benchmark during the timing pass."""

    case: dict
    sides: dict[str, SideState] = field(default_factory=lambda: {"base": SideState(), "head": SideState()})
    #: Calls per sample, the same on both sides and in every process pair: calibrated once, by the
    #: first side set up. Why: samples of different lengths meet different interference (A/A on a
    #: shared 2-vCPU VM: base calibrated to 100 calls, head to 42, and head read 19 % "faster" for
    #: all 12 pairs; 7 of 25 identical benchmarks had sides with different counts).
    number: int | None = None
    look_index: int = 0
    block_starts: list[int] = field(default_factory=list)
    estimate: stats.BlockedEstimate | None = None
    verdict: str = "inconclusive"
    stop_reason: str = ""
    seconds: float = 0.0
    p_adjusted: float | None = None

    @property
    def name(self) -> str:
        return self.case["name"]

    @property
    def base(self) -> list[float]:
        return self.sides["base"].samples

    @property
    def head(self) -> list[float]:
        return self.sides["head"].samples

    def blocks(self, pair_rounds: int) -> list[tuple[int, int]]:
        """``(start, end)`` round indices of the process pairs that completed ``pair_rounds``
        rounds (the estimate uses only those: every pair weighs the same)."""
        bounds = self.block_starts + [len(self.base)]
        return [(a, b) for a, b in zip(bounds, bounds[1:]) if b - a >= pair_rounds]


#: Warm-up samples of a benchmark's later process pairs, at most (see :meth:`Session.setup`).
WARMUP_SAMPLES_MAX = 3


def _peak(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def safe_filename(name: str) -> str:
    """A benchmark name as a file name: ``bench_x[rows=4096]`` → ``bench_x-rows=4096``."""
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "-", name).strip("-") or "benchmark"


class Session:
    """The two workers of one compare and the telemetry sampler, with the sampling loop.

    Isolation: every benchmark starts in a fresh pair of worker processes (forked by each side's
    server, :mod:`runner.manager`), and after every ``pair_rounds`` rounds the benchmark moves to
    another fresh pair, so the process pair is the unit the statistics replicate
    (:func:`runner.stats.blocked_estimate`) and no benchmark runs in a process another one used.
    """

    def __init__(self, workers: dict[str, WorkerProcess], cfg: Config, bench_dirs: dict[str, str],
                 telemetry=None, progress: Progress | None = None, clock: Callable[[], float] = time.monotonic):
        self.workers = workers
        self.cfg = cfg
        self.bench_dirs = bench_dirs
        self.telemetry = telemetry
        self.progress = progress or NoProgress()
        self.clock = clock
        self.looks = stats.look_schedule(cfg.min_rounds, cfg.max_rounds, cfg.pair_rounds, cfg.min_process_pairs)
        self.look_alpha = stats.per_look_alpha(cfg.alpha, len(self.looks))
        self.ci_level = 1.0 - self.look_alpha

    # -- one side -------------------------------------------------------------------------
    def request(self, side: str, cmd: str, **fields) -> dict:
        """One request to one side's worker, with telemetry tagged by side; a dead or hung worker
        comes back as ``{ok: False, error}`` (the next request forks a fresh one)."""
        if self.telemetry is not None:
            self.telemetry.set_side(side)
        try:
            return self.workers[side].request(cmd, **fields)
        except WorkerFailure as exc:
            return {"ok": False, "error": str(exc)}
        finally:
            if self.telemetry is not None:
                self.telemetry.set_side(None)

    def fresh_processes(self, order: tuple[str, str] = ("base", "head")) -> None:
        """End both sides' current worker children, in ``order``; the next request forks new ones."""
        for side in order:
            self.workers[side].end_child()

    def setup(self, state: BenchState, side: str) -> bool:
        case, own = state.case, state.sides[side]
        resp = self.request(side, "setup", dir=self.bench_dirs[side], file=case["file"], func=case["func"],
                            name=case["name"], min_sample_time=self.cfg.min_sample_time,
                            cold_cache=self.cfg.cold_cache, number=state.number, warmup_samples=own.warmup_samples)
        if not resp.get("ok"):
            own.error = resp.get("error") or "set-up failed"
            return False
        state.number = state.number or resp["number"]
        if own.number is None:
            own.number = resp["number"]
            own.warmup_calls = resp["warmup_calls"]
            # Later pairs start from a first call already made, in a process forked from the same
            # server: a fixed, short warm-up (the first pair's count, 1 to 3 samples) instead of
            # an adaptive loop that reads a fresh process's noise and costs more than the rounds.
            own.warmup_samples = min(WARMUP_SAMPLES_MAX, max(1, int(resp.get("warmup_samples") or 1)))
        return True

    def sample(self, state: BenchState, side: str) -> bool:
        own = state.sides[side]
        resp = self.request(side, "sample", count=1)
        if not resp.get("ok"):
            own.error = resp.get("error") or "sample failed"
            return False
        own.samples.extend(resp["samples"])
        own.peak = _peak(own.peak, resp.get("peak_memory_bytes"))
        return True

    # -- one benchmark ----------------------------------------------------------------------
    def run_benchmark(self, state: BenchState, deadline: float) -> None:
        """Set up both sides in fresh processes and take rounds until decided, failed, out of
        looks or past ``deadline``."""
        t0 = self.clock()
        try:
            self.fresh_processes()
            base_ok = self.setup(state, "base")
            head_ok = self.setup(state, "head")
            if not head_ok:
                state.verdict, state.stop_reason = "failed", "head failed to set up"
                return
            if not base_ok:
                # New on head: keep a few head samples for the record (and for history).
                state.verdict, state.stop_reason = "new", "cannot be set up on base"
                for _ in range(self.cfg.min_rounds):
                    if not self.sample(state, "head"):
                        state.verdict = "failed"
                        break
                return
            state.block_starts.append(0)
            self._continue(state, deadline)
        finally:
            self.fresh_processes()
            state.seconds += self.clock() - t0

    def _continue(self, state: BenchState, deadline: float) -> None:
        pair_rounds = self.cfg.pair_rounds
        round_seconds = 0.0
        while state.look_index < len(self.looks):
            target_pairs = self.looks[state.look_index] // pair_rounds
            while len(state.blocks(pair_rounds)) < target_pairs:
                if len(state.base) - state.block_starts[-1] >= pair_rounds and not self.new_process_pair(state):
                    return
                if self.clock() + round_seconds > deadline:
                    state.stop_reason = "time budget spent"
                    return
                r0 = self.clock()
                n = len(state.base)
                order = ("base", "head") if n % 2 == 0 else ("head", "base")
                for side in order:
                    if not self.sample(state, side):
                        # Keep the pairs complete: drop an unpaired sample of the other side.
                        del state.base[n:], state.head[n:]
                        state.verdict, state.stop_reason = "failed", f"{side} failed while sampling"
                        return
                round_seconds = self.clock() - r0
                self.progress.rounds(state.name, len(state.base), state.estimate)
            state.estimate = self.estimate(state)
            state.look_index += 1
            state.verdict = stats.decide(state.estimate, self.cfg.threshold, state.estimate.p_value < self.look_alpha,
                                         self.cfg.min_process_pairs)
            self.progress.rounds(state.name, len(state.base), state.estimate)
            if state.verdict != "inconclusive":
                state.stop_reason = f"decided at look {state.look_index} of {len(self.looks)}"
                return
        state.stop_reason = f"still inconclusive after {self.looks[-1]} rounds (max_rounds)"

    def estimate(self, state: BenchState) -> stats.BlockedEstimate:
        """The estimate over the benchmark's complete process pairs so far."""
        blocks = [stats.block_summary(state.base[a:b], state.head[a:b])
                  for a, b in state.blocks(self.cfg.pair_rounds)]
        return stats.blocked_estimate(blocks, self.ci_level, self.cfg.process_noise)

    def new_process_pair(self, state: BenchState) -> bool:
        """Move the benchmark to a fresh pair of worker processes; False (and ``failed``) if it
        cannot be set up again."""
        # Which side goes first alternates from pair to pair (as ABBA does for rounds): the first
        # process to start and allocate gets other memory than the second (pages the last pair's
        # processes freed come back last-in first-out), and in one order only that was a
        # systematic offset (A/A, a 51 MB-weights loss step: head 1.1 % faster over 10 pairs).
        order = ("base", "head") if len(state.block_starts) % 2 == 0 else ("head", "base")
        self.fresh_processes(order)
        if self.setup(state, order[0]) and self.setup(state, order[1]):
            state.block_starts.append(len(state.base))
            return True
        state.verdict, state.stop_reason = "failed", "set-up failed in a fresh process"
        return False

    def resume(self, state: BenchState, deadline: float) -> None:
        """Second pass for an inconclusive benchmark: continue its looks in fresh process pairs."""
        t0 = self.clock()
        try:
            # A pair the first pass left unfinished stays in the samples but not in the estimate.
            if self.new_process_pair(state):
                self._continue(state, deadline)
        finally:
            self.fresh_processes()
            state.seconds += self.clock() - t0

    # -- the whole timing pass --------------------------------------------------------------
    def time_all(self, states: list[BenchState]) -> None:
        """The timing pass: a first pass over every benchmark with its fair share of the budget,
        then, while budget remains, more looks for the benchmarks that are still inconclusive
        after Benjamini–Hochberg across the run (:meth:`finalize`)."""
        budget_end = self.clock() + self.cfg.max_time
        self.progress.start(len(states))
        for i, state in enumerate(states):
            self.progress.benchmark(i, state.name)
            share = max(budget_end - self.clock(), 0.0) / (len(states) - i)
            self.run_benchmark(state, self.clock() + share)
            self.progress.finished(state.name, state.verdict)
        while True:
            self.finalize(states)
            pending = [s for s in states if s.verdict == "inconclusive" and s.look_index < len(self.looks)
                       and s.block_starts]
            if not pending or self.clock() >= budget_end:
                return
            for j, state in enumerate(pending):
                left = budget_end - self.clock()
                if left <= 0:
                    break
                self.progress.benchmark(states.index(state), state.name)
                self.resume(state, self.clock() + left / (len(pending) - j))
                self.progress.finished(state.name, state.verdict)

    def finalize(self, states: list[BenchState]) -> None:
        """Run-level verdicts of the paired benchmarks: Benjamini–Hochberg across the run on each
        benchmark's sequential p-value (runner.stats.final_verdicts)."""
        paired = [s for s in states if s.estimate is not None and s.verdict not in ("failed", "new")]
        p_seq = [stats.sequential_p(s.estimate.p_value, len(self.looks)) for s in paired]
        verdicts, adjusted = stats.final_verdicts([s.estimate for s in paired], p_seq, self.cfg.alpha,
                                                  self.cfg.threshold, self.cfg.min_process_pairs)
        for s, verdict, q in zip(paired, verdicts, adjusted):
            s.verdict, s.p_adjusted = verdict, q


def benchmark_entry(state: BenchState, ci_level: float, pair_rounds: int) -> dict:
    """One ``benchmarks[]`` entry of results.json from a finished :class:`BenchState`.

    ``change.pairs`` lists every process pair ``{start, rounds, ratio, used}`` (``start`` is the
    index of its first round in the samples; ``used`` is false for a pair the budget cut short,
    which the estimate leaves out), so a reader can see a pair that disagrees.
    """
    est = state.estimate
    used = set(state.blocks(pair_rounds))
    bounds = state.block_starts + [len(state.base)]
    pairs = []
    for a, b in zip(bounds, bounds[1:]):
        ratio = None
        if b - a >= 2:
            ratio = round(math.exp(stats.block_summary(state.base[a:b], state.head[a:b])[0]), 6)
        pairs.append({"start": a, "rounds": b - a, "ratio": ratio, "used": (a, b) in used})
    change = {
        "ratio": est.ratio if est else None,
        "ci_low": est.ci_low if est else None,
        "ci_high": est.ci_high if est else None,
        "p_value": est.p_value if est else None,
        "verdict": state.verdict,
        "ci_level": ci_level if est else None,
        "rounds": len(state.base),
        "process_pairs": est.blocks if est else len(state.block_starts),
        "pairs": pairs,
        "between_process_sd": est.between_sd if est else None,
        "p_adjusted": state.p_adjusted,
        "stop_reason": state.stop_reason,
        "seconds": round(state.seconds, 3),
    }
    return {
        "name": state.name,
        "file": state.case.get("file"),
        "unit": "s",
        "base": _side_entry(state.sides["base"]),
        "head": _side_entry(state.sides["head"]),
        "change": change,
        "hints": [],
        "profile": None,
    }


def _side_entry(side: SideState) -> dict:
    return results_mod.side_result(side.samples, peak_memory_bytes=side.peak, error=side.error, **side.info())


@dataclass
class CompareRequest:
    """Everything one compare needs (from the CLI, the Action, or a test)."""

    repo: str
    base: str
    head: str
    config: Config
    out: Path
    benchmarks: str | None = None
    filter: str | None = None
    pr: PullRequestText = field(default_factory=PullRequestText)
    config_overrides: dict = field(default_factory=dict)
    config_file: str | None = None


def compare(req: CompareRequest, progress: Progress | None = None) -> dict:
    """Run the whole pipeline and write ``OUT/results.json`` (reports are the caller's).

    Raises:
        UserError: not a git repository, unknown ref, bad config, no benchmarks, a failed
            install command. Benchmark failures are not raised: they are results.
    """
    from . import config as config_mod

    progress = progress or NoProgress()
    if req.config_file:
        config_mod.load_file(req.config_file)  # a broken --config fails before any checkout
    root = repo_root(req.repo)
    base_sha = resolve(root, req.base)
    head_sha = resolve(root, req.head)
    req.out.mkdir(parents=True, exist_ok=True)
    with Checkouts(root, req.out) as co:
        progress.phase("checking out base and head")
        base_rev = co.add("base", req.base, base_sha)
        head_rev = co.add("head", req.head, head_sha)
        # The policy is the maintainers': --config FILE, else the base revision's file, never the head's.
        policy = {"config_source": "file" if req.config_file else "base",
                  "config_changed_by_head": config_mod.head_changes(base_rev.path, head_rev.path)}
        cfg = req.config
        if cfg is None:
            if req.config_file:
                file_cfg = config_mod.load_file(req.config_file)
            else:
                file_cfg, _ = config_mod.load(base_rev.path)
            cfg = file_cfg.override(**req.config_overrides)
        if cfg.install:
            for rev in (base_rev, head_rev):
                progress.phase(f"installing {rev.side} ({rev.sha[:12]}): {cfg.install}")
                co.install(rev, cfg.install)
        bench_dirs = _bench_dirs(req.benchmarks, cfg, base_rev, head_rev)
        results = _measure(req, cfg, {"base": base_rev, "head": head_rev}, bench_dirs, root, progress, policy)
    return results


def _bench_dirs(override: str | None, cfg: Config, base: Revision, head: Revision) -> dict[str, str]:
    if override:
        path = Path(override).expanduser().resolve()
        if not path.is_dir():
            raise UserError(f"--benchmarks {override}: no such directory")
        return {"base": str(path), "head": str(path), "shared": True}
    head_dir = head.path / cfg.benchmarks
    if not head_dir.is_dir():
        raise UserError(f"no benchmark directory {cfg.benchmarks!r} at head {head.sha[:12]} "
                        f"(set `benchmarks` in [tool.perfgate] or pass --benchmarks DIR)")
    return {"base": str(base.path / cfg.benchmarks), "head": str(head_dir), "shared": False}


def _measure(req: CompareRequest, cfg: Config, revs: dict[str, Revision], bench_dirs: dict, root: Path,
             progress: Progress, policy: dict) -> dict:
    from .telemetry import TelemetrySampler

    doctor = examine([req.out])  # before the workers start: the GPU idle, nothing of ours on it
    workers, worker_conditions = start_workers(revs, cfg, req.out / "logs")
    telemetry = TelemetrySampler()
    try:
        progress.phase("starting workers")
        listing = _preload(workers["head"], bench_dirs["head"])
        base_listing = None
        if Path(bench_dirs["base"]).is_dir():
            base_listing = _preload(workers["base"], bench_dirs["base"])
        env_resp = {}
        for side in ("head", "base"):
            try:
                env_resp[side] = workers[side].request("env")
            except WorkerFailure as exc:
                raise UserError(f"the {side} worker could not start: {exc}") from None
            if not env_resp[side].get("ok"):
                raise UserError(f"the {side} worker could not start: {env_resp[side].get('error')}")
            workers[side].end_child()
        cases = [c for c in listing["benchmarks"] if matches(c["name"], req.filter)]
        file_errors = [e for e in listing["errors"] if matches(e["file"], req.filter) or not req.filter]
        if not cases and not file_errors:
            if listing["benchmarks"] and req.filter:
                names = ", ".join(c["name"] for c in listing["benchmarks"][:8])
                raise UserError(f"no benchmark matches --filter {req.filter!r} (there are: {names})")
            raise UserError(f"no benchmarks found in {bench_dirs['head']} (bench_*.py files with bench_* functions)")
        removed = []
        if not bench_dirs.get("shared") and base_listing is not None:
            head_names = {c["name"] for c in listing["benchmarks"]}
            removed = [c for c in base_listing.get("benchmarks", [])
                       if c["name"] not in head_names and matches(c["name"], req.filter)]

        states = [BenchState(case=c) for c in cases]
        session = Session(workers, cfg, {"base": bench_dirs["base"], "head": bench_dirs["head"]},
                          telemetry=telemetry, progress=progress)
        telemetry.start()
        try:
            session.time_all(states)
        finally:
            telemetry.stop()
        telemetry_summary = telemetry.summary()
        entries = [benchmark_entry(s, session.ci_level, cfg.pair_rounds) for s in states]
        entries += [_file_error_entry(e) for e in file_errors]
        entries += [_removed_entry(c) for c in removed]
        if cfg.profile:
            _profile_pass(session, states, entries, req.out, telemetry_summary, progress)
        sides = {side: {"processes": w.children_started, "preloaded": bool(w.preload_dir) and not w.preload_refused,
                        "preload_refused": w.preload_refused or None,
                        # as a worker saw them (pinning and thread count), for the record
                        "cpus": env_resp[side].pop("cpus", None), "torch_threads": env_resp[side].pop("threads", None)}
                 for side, w in workers.items()}
    finally:
        for w in workers.values():
            w.close()

    settings = {
        "threshold": cfg.threshold, "alpha": cfg.alpha, "min_rounds": cfg.min_rounds, "max_time": cfg.max_time,
        "max_rounds": cfg.max_rounds, "pair_rounds": cfg.pair_rounds, "looks": session.looks,
        "ci_level": session.ci_level, "min_sample_time": cfg.min_sample_time, "cold_cache": cfg.cold_cache,
        "fail_threshold": cfg.fail_threshold, "process_noise": cfg.process_noise,
        "min_process_pairs": cfg.min_process_pairs, "allocator": cfg.allocator,
        "filter": req.filter, "profile": cfg.profile, **policy,
    }
    intent = _intent(req, root, revs)
    environment = capture(env_resp.get("head"), telemetry_summary)
    environment["worker"] = {**worker_conditions, "sides": sides, "timer": timer_description(environment.get("device"))}
    environment["doctor"] = doctor
    doc = results_mod.new_results(
        repository=str(root),
        base={"ref": req.base, "sha": revs["base"].sha},
        head={"ref": req.head, "sha": revs["head"].sha},
        environment=environment,
        settings=settings, benchmarks=entries, intent=intent)
    results_mod.dump(doc, req.out / "results.json")
    return doc


def _preload(worker: WorkerProcess, directory: str) -> dict:
    """List the benchmarks under ``directory`` and import them into the side's fork server.

    Raises:
        UserError: the files could not even be listed (the server died or hung importing them).
    """
    try:
        listing = worker.preload(directory)
    except WorkerFailure as exc:
        raise UserError(f"cannot list benchmarks in {directory}: {exc}") from None
    if not listing.get("ok"):
        raise UserError(f"cannot list benchmarks in {directory}: {listing.get('error')}")
    return listing


def _file_error_entry(err: dict) -> dict:
    return {"name": err["file"], "file": err["file"], "unit": "s", "base": None,
            "head": results_mod.side_result(error=err["error"]),
            "change": {"ratio": None, "ci_low": None, "ci_high": None, "p_value": None, "verdict": "failed"},
            "hints": [], "profile": None}


def _removed_entry(case: dict) -> dict:
    return {"name": case["name"], "file": case["file"], "unit": "s", "base": None, "head": None,
            "change": {"ratio": None, "ci_low": None, "ci_high": None, "p_value": None, "verdict": "removed"},
            "hints": [], "profile": None}


#: Profile passes per side for a benchmark that may get hints (changed or inconclusive).
PROFILE_PASSES = 3


def _profile_pass(session: Session, states: list[BenchState], entries: list[dict], out: Path,
                  telemetry_summary: dict, progress: Progress) -> None:
    """After timing (profiling perturbs time): trace both sides, summarise, diff, hint.

    A benchmark that may get hints is profiled :data:`PROFILE_PASSES` times per side, sides
    alternating, each pass in a fresh process; the pass with the median total time of each side is
    the one diffed and kept (``traces/<side>/<benchmark>.json.gz``), and the spread over the passes
    decides which differences a hint may cite (:mod:`runner.profile_noise`). An ``unchanged``
    benchmark gets one pass (its side-by-side table; it gets no hints).
    """
    from .hints import hints_for, profile_for_results
    from .profile_noise import median_pass, pass_spread
    from .trace import summarize

    profilable = [(s, e) for s, e in zip(states, entries) if s.verdict not in ("failed", "new")]
    progress.phase(f"profiling {len(profilable)} benchmark(s)")
    for state, entry in profilable:
        passes = PROFILE_PASSES if state.verdict in ("regression", "improvement", "inconclusive") else 1
        summaries: dict[str, list[tuple[Path, dict]]] = {"base": [], "head": []}
        for p in range(passes):
            for side in (("base", "head") if p % 2 == 0 else ("head", "base")):
                trace_path = out / "traces" / side / f"{safe_filename(state.name)}.pass{p + 1}.json.gz"
                session.fresh_processes()
                ok = session.setup(state, side)
                resp = session.request(side, "profile", trace_path=str(trace_path), calls=5) if ok else {}
                if not resp.get("ok"):
                    entry.setdefault("profile_errors", {})[side] = resp.get("error") or state.sides[side].error
                    continue
                try:
                    summaries[side].append((trace_path, summarize(trace_path)))
                except UserError as exc:
                    entry.setdefault("profile_errors", {})[side] = str(exc)
        session.fresh_processes()
        kept = {}
        for side, done in summaries.items():
            if not done:
                continue
            keep = median_pass([summary for _, summary in done])
            final = out / "traces" / side / f"{safe_filename(state.name)}.json.gz"
            for i, (path, _) in enumerate(done):
                if i == keep:
                    path.replace(final)
                else:
                    path.unlink(missing_ok=True)
            kept[side] = done[keep][1]
        if len(kept) == 2:
            noise = pass_spread([s for _, s in summaries["base"]], [s for _, s in summaries["head"]])
            entry["profile"] = profile_for_results(kept["base"], kept["head"])
            entry["profile"]["traces"] = {side: str(Path("traces") / side / f"{safe_filename(state.name)}.json.gz")
                                          for side in ("base", "head")}
            entry["profile"]["passes"] = noise["passes"]
            entry["hints"] = hints_for(entry["change"], kept["base"], kept["head"], telemetry_summary,
                                       noise=noise if min(noise["passes"].values()) > 1 else None)
        elif entry["change"]["verdict"] in ("regression", "improvement"):
            entry["hints"] = hints_for(entry["change"], None, None, telemetry_summary)


def _intent(req: CompareRequest, root: Path, revs: dict[str, Revision]) -> dict:
    """``intent`` of results.json: the PR's text when given, always with the commits and the diff."""
    from . import intent as intent_mod

    found = intent_mod.from_git(root, revs["base"].sha, revs["head"].sha, title=req.pr.title,
                                body=req.pr.body, labels=req.pr.labels)
    found["source"] = "pull request and commits" if req.pr.given() else "commits"
    return found


def fail_on_regression(doc: dict, fail_threshold: float) -> list[str]:
    """Names of benchmarks whose verdict is ``regression`` with ratio > 1 + fail_threshold."""
    out = []
    for b in doc["benchmarks"]:
        ch = b.get("change") or {}
        if ch.get("verdict") == "regression" and ch.get("ratio") and ch["ratio"] > 1.0 + fail_threshold:
            out.append(b["name"])
    return out


