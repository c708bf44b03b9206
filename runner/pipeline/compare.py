"""``perfgate compare``: refs → worktrees → workers → timing pass → profiles → results.json.

``compare()`` is the orchestration (the imperative shell); every decision it takes is made by a
pure function elsewhere: the stopping rule and verdicts in :mod:`runner.stats` (driven by
:mod:`.timing`), filters in :mod:`.select`, the conditions in :mod:`.conditions`, hints in
:mod:`runner.profile`, intent in :mod:`runner.intent`, the document in :mod:`runner.results`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import results as results_mod
from ..config import Config
from ..environment import capture
from ..errors import UserError
from ..profile.hints import with_compile_hint
from .conditions import timer_description
from .machine_facts import examine
from ..git import repo_root, resolve
from ..protocol import Listing, ProtocolError
from .revisions import Checkouts, Revision
from . import schedule, suites
from ..selection import matches
from .measured import MeasuredPass, entry as measured_entry
from .profiling import profile_pass
from .benchstate import BenchState
from .entries import benchmark_entry
from .pairs import NoProgress, Progress
from .timing import TimingPass
from .workers import WorkerFailure, WorkerProcess, start_workers


@dataclass
class PullRequestText:
    """What the PR says about itself (for intent); empty fields mean "use the commits"."""

    title: str = ""
    body: str = ""
    labels: list[str] = field(default_factory=list)

    def given(self) -> bool:
        return bool(self.title or self.body or self.labels)


@dataclass
class CompareRequest:
    """Everything one compare needs (from the CLI, the Action, or a test). ``names``: exact
    benchmark names to measure (``perfgate bisect`` follows one; None: all ``filter`` selects)."""

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
    names: list[str] | None = None
    #: Run only the benchmarks the change can affect (runner.selection): True (``--affected``),
    #: False (``--all``: everything, even where the config enables selection), None: the config's
    #: ``[selection] enabled``.
    affected: bool | None = None
    #: A stored results.json whose ``code_map`` (and values) selection uses; None: map the base here.
    map_file: str | None = None
    #: Benchmark names or globs that run whatever the selection says (``--force-run``: the App's
    #: selection misses, runner.selection.FORCED).
    force_run: list[str] = field(default_factory=list)


def compare(req: CompareRequest, progress: Progress | None = None) -> dict:
    """Run the whole pipeline and write ``OUT/results.json`` (reports are the caller's).

    Raises:
        UserError: not a git repository, unknown ref, bad config, no benchmarks, a failed
            install command. Benchmark failures are not raised: they are results.
    """
    from .. import config as config_mod

    progress = progress or NoProgress()
    started = time.monotonic()  # --max-time counts from here (the install command's own time excluded)
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
        # deprecated keys: each said once per compare, and recorded (settings.config_deprecated)
        for message in cfg.deprecated.values():
            print(f"perfgate: warning: {message}", file=sys.stderr)
        install_seconds = 0.0
        if cfg.install:
            for rev in (base_rev, head_rev):
                progress.phase(f"installing {rev.side} ({rev.sha[:12]}): {cfg.install}")
                t0 = time.monotonic()
                co.install(rev, cfg.install)
                install_seconds += time.monotonic() - t0
        bench_dirs = _bench_dirs(req.benchmarks, cfg, base_rev, head_rev)
        clock = _BudgetClock(started + install_seconds, install_seconds)
        results = _measure(req, cfg, {"base": base_rev, "head": head_rev}, bench_dirs, root, progress, policy, clock)
    return results


def _bench_dirs(override: str | None, cfg: Config, base: Revision, head: Revision) -> dict:
    """``{base, head, shared, suite}``: each side's benchmark directory and the suite's convention
    (:mod:`.suites`, decided on the head revision, the directory the same on both sides)."""
    if override:
        path = Path(override).expanduser().resolve()
        if not path.is_dir():
            raise UserError(f"--benchmarks {override}: no such directory")
        return {"base": str(path), "head": str(path), "shared": True, "suite": suites.detect_in(path, cfg.suite, cfg)}
    suite = suites.detect(head.path, cfg.suite, cfg.benchmarks, cfg)
    head_dir = head.path / suite.directory
    if not head_dir.is_dir():
        raise UserError(f"no benchmark directory {suite.directory!r} at head {head.sha[:12]} "
                        f"(set `benchmarks` in [tool.perfgate] or pass --benchmarks DIR)")
    return {"base": str(base.path / suite.directory), "head": str(head_dir), "shared": False, "suite": suite.kind}


@dataclass
class _BudgetClock:
    """When the compare's budget started (monotonic seconds, moved on by the install's time) and
    where its seconds went (``settings.budget``)."""

    start: float
    install_s: float = 0.0
    startup_s: float = 0.0
    timing_s: float = 0.0
    profile_s: float = 0.0

    def record(self, max_time: float, states: list[BenchState], unprofiled: list[str]) -> dict:
        spent = time.monotonic() - self.start
        return {"max_time": max_time, "spent_s": round(spent, 3), "install_s": round(self.install_s, 3),
                "startup_s": round(self.startup_s, 3), "timing_s": round(self.timing_s, 3),
                "profile_s": round(self.profile_s, 3),
                "cut_short": [s.name for s in states if s.budget_cut and s.verdict == "inconclusive"],
                "unprofiled": unprofiled}


def _measure(req: CompareRequest, cfg: Config, revs: dict[str, Revision], bench_dirs: dict, root: Path,
             progress: Progress, policy: dict, clock: "_BudgetClock | None" = None) -> dict:
    from .clocks import ClockControl
    from .telemetry import TelemetrySampler

    doctor = examine([req.out])  # before the workers start: the GPU idle, nothing of ours on it
    workers, worker_conditions = start_workers(revs, cfg, req.out / "logs")
    telemetry = TelemetrySampler()
    clock_control = None
    try:
        progress.phase("starting workers")
        suite = bench_dirs["suite"]
        options = suites.options(suite, cfg)
        listing = _preload(workers["head"], bench_dirs["head"], suite, options)
        base_listing = None
        if Path(bench_dirs["base"]).is_dir():
            base_listing = _preload(workers["base"], bench_dirs["base"], suite, options)
        env_resp = {}
        for side in ("head", "base"):
            try:
                env_resp[side] = workers[side].request("env")
            except WorkerFailure as exc:
                raise UserError(f"the {side} worker could not start: {exc}") from None
            if not env_resp[side].get("ok"):
                raise UserError(f"the {side} worker could not start: {env_resp[side].get('error')}")
            workers[side].end_child()
        cases = [c for c in listing["benchmarks"] if matches(c["name"], req.filter)
                 and (req.names is None or c["name"] in req.names)]
        file_errors = [e for e in listing["errors"] if matches(e["file"], req.filter) or not req.filter]
        skipped = [dict(s) for s in listing.get("skipped") or [] if matches(s["name"], req.filter)
                   and (req.names is None or s["name"] in req.names)]
        if not cases and not file_errors and not skipped:
            if listing["benchmarks"] and req.filter:
                names = ", ".join(c["name"] for c in listing["benchmarks"][:8])
                raise UserError(f"no benchmark matches --filter {req.filter!r} (there are: {names})")
            raise UserError(f"no benchmarks found in {bench_dirs['head']} ({suites.looked_for(suite)})")
        removed = []
        if not bench_dirs.get("shared") and base_listing is not None:
            head_names = {c["name"] for c in listing["benchmarks"]}
            removed = [c for c in base_listing.get("benchmarks", [])
                       if c["name"] not in head_names and matches(c["name"], req.filter)
                       and (req.names is None or c["name"] in req.names)]

        selection_record, code_map = None, None
        if _selecting(req, cfg):
            cases, selection_record, code_map = _select(req, cfg, workers, revs, bench_dirs, base_listing, cases,
                                                        options, progress, root)
        elif cfg.selection.enabled:
            selection_record = {"mode": "all", "map_sha": None, "full_run": "asked to run every benchmark (--all)",
                                "changed": [], "changed_count": 0, "run": len(cases), "skipped": [],
                                "run_reasons": {"full run": len(cases)}}

        states = [BenchState(case=c) for c in cases]
        threads = (env_resp["head"].get("threads") or {}).get("intra_op") \
            if env_resp["head"].get("device") == "cpu" else None
        if str(env_resp["head"].get("device") or "").startswith("cuda"):
            clock_control = ClockControl(cfg.lock_clocks, cfg.lock_clocks_mhz)
            clock_record = clock_control.start()
        else:
            clock_record = {"policy": "none", "reason": "not a CUDA run: no GPU clocks to lock or watch"}
        session = TimingPass(workers, cfg, {"base": bench_dirs["base"], "head": bench_dirs["head"]},
                             telemetry=telemetry, progress=progress, threads=threads,
                             device=env_resp["head"].get("device"), options=options,
                             locked_sm_mhz=clock_record.get("sm_mhz") if clock_record.get("policy") == "lock" else None)
        timed = [s for s in states if s.case.get("measures") != "self"]
        self_measured = [s for s in states if s.case.get("measures") == "self"]
        clock = clock or _BudgetClock(time.monotonic())
        timing_start = time.monotonic()
        clock.startup_s = timing_start - clock.start
        budget = schedule.split_budget(clock.start, cfg.max_time, timing_start, cfg.profile)
        telemetry.start()
        try:
            if self_measured:
                # their share of the timing budget, by count; then the timed benchmarks get the rest
                share = (budget.timing_end - time.monotonic()) * len(self_measured) / len(states)
                MeasuredPass(session).run(self_measured, time.monotonic() + share)
            if timed:
                session.time_all(timed, end=budget.timing_end)
            session.finalize(states)  # Benjamini–Hochberg across every benchmark of the run
        finally:
            telemetry.stop()
            if clock_control is not None:
                clock_control.restore()  # before profiling: the locked clocks were for the timing pass
        clock.timing_s = time.monotonic() - timing_start
        telemetry_summary = telemetry.summary()
        telemetry_summary["clocks"] = dict(clock_control.record if clock_control is not None else clock_record)
        skipped += [{"name": s.name, "file": s.case.get("file"), "reason": s.stop_reason}
                    for s in states if s.verdict == "skipped"]
        states = [s for s in states if s.verdict != "skipped"]
        entries = [measured_entry(s, session.ci_level, cfg.memory_threshold, cfg.min_process_pairs)
                   if s.case.get("measures") == "self"
                   else benchmark_entry(s, session.ci_level, cfg.memory_threshold, cfg.min_process_pairs)
                   for s in states]
        entries += [results_mod.failed_file(e["file"], e["error"]) for e in file_errors]
        entries += [results_mod.removed(c["name"], c["file"]) for c in removed]
        unprofiled: list[str] = []
        if cfg.profile:
            profile_start = time.monotonic()
            profiled = [(s, e) for s, e in zip(states, entries) if s.case.get("measures") != "self"]
            unprofiled = profile_pass(session, [s for s, _ in profiled], [e for _, e in profiled], req.out,
                                       telemetry_summary, progress, deadline=budget.profile_end)
            clock.profile_s = time.monotonic() - profile_start
        for entry in entries:
            entry["hints"] = with_compile_hint(entry.get("hints"), results_mod.change_of(entry))
        sides = {side: {"processes": w.children_started, "preloaded": bool(w.preload_dir) and not w.preload_refused,
                        "preload_refused": w.preload_refused or None,
                        # as a worker saw them (pinning and thread count), for the record
                        "cpus": env_resp[side].pop("cpus", None), "torch_threads": env_resp[side].pop("threads", None)}
                 for side, w in workers.items()}
    finally:
        if clock_control is not None:
            clock_control.restore()  # idempotent: a compare that failed half way leaves no clock locked
        for w in workers.values():
            w.close()

    settings = dict(
        threshold=cfg.threshold, alpha=cfg.alpha, min_rounds=cfg.min_rounds, max_time=cfg.max_time,
        max_rounds=cfg.max_rounds, pair_rounds=cfg.pair_rounds, looks=session.looks, ci_level=session.ci_level,
        eq_level=session.eq_level,
        min_sample_time=session.min_sample_time, cold_cache=cfg.cold_cache, fail_threshold=cfg.fail_threshold,
        memory_threshold=cfg.memory_threshold, fail_on_memory_regression=cfg.fail_on_memory_regression,
        process_noise=cfg.process_noise, min_process_pairs=cfg.min_process_pairs, allocator=cfg.allocator,
        filter=req.filter, profile=cfg.profile, config_source=policy["config_source"],
        config_changed_by_head=policy["config_changed_by_head"], suite=bench_dirs["suite"], skipped=skipped,
        looks_pairs=session.look_pairs, budget=clock.record(cfg.max_time, states, unprofiled))
    if cfg.deprecated:
        settings["config_deprecated"] = list(cfg.deprecated)
    intent = _intent(req, root, revs)
    environment = capture(env_resp.get("head"), telemetry_summary)
    environment["worker"] = {**worker_conditions, "sides": sides, "timer": timer_description(environment.get("device"))}
    environment["doctor"] = doctor
    doc = results_mod.new_results(
        repository=str(root),
        base={"ref": req.base, "sha": revs["base"].sha},
        head={"ref": req.head, "sha": revs["head"].sha},
        environment=environment,
        settings=settings, benchmarks=entries, intent=intent,
        **({"selection": selection_record} if selection_record is not None else {}),
        **({"code_map": code_map} if code_map is not None else {}))
    results_mod.dump(doc, req.out / "results.json")
    return doc


def _selecting(req: CompareRequest, cfg: Config) -> bool:
    """Whether this compare selects (``--affected``; else the config's ``[selection] enabled``
    unless ``--all``)."""
    return bool(req.affected) if req.affected is not None else cfg.selection.enabled


def _select(req: CompareRequest, cfg: Config, workers: dict, revs: dict[str, Revision], bench_dirs: dict,
            base_listing: dict | None, cases: list[dict], options: dict, progress: Progress, root: Path
            ) -> tuple[list[dict], dict, dict | None]:
    """``(cases to measure, the selection record, the code map made here or None)``: the base's
    code map (``--map FILE``, else a map pass over the base's benchmarks, within
    :data:`runner.pipeline.mapping.MAP_BUDGET_SHARE` of ``max_time``), the paths base..head
    changed, and :func:`runner.selection.select`."""
    from .. import selection
    from .mapping import MAP_BUDGET_SHARE, changed_paths, load_map, map_pass, own_file, relative_dir

    base_rev = revs["base"]
    rel_bench = "" if bench_dirs.get("shared") else relative_dir(bench_dirs["base"], base_rev.path)
    made = None
    if req.map_file:
        code_map, last = load_map(req.map_file)
    elif base_listing is None:
        code_map, last = None, {}
    else:
        wanted = {c["name"] for c in cases}
        progress.phase("mapping the base's benchmarks to the code they run")
        code_map = made = map_pass(workers["base"], bench_dirs["base"],
                                   [c for c in base_listing.get("benchmarks", []) if c["name"] in wanted],
                                   base_rev.path, sha=base_rev.sha, rel_bench_dir=rel_bench, options=options,
                                   deadline=time.monotonic() + MAP_BUDGET_SHARE * cfg.max_time, progress=progress)
        last = {}
    changed = changed_paths(root, base_rev.sha, revs["head"].sha)
    files = {c["name"]: own_file(rel_bench, c.get("file")) for c in cases}
    forced = {c["name"]: "a selection miss: it runs until the map is rebuilt" for c in cases
              if any(selection.matches(c["name"], p) for p in req.force_run)}
    plan = selection.select([(c["name"], files[c["name"]]) for c in cases], changed, code_map, cfg.selection,
                            bench_dir=rel_bench, forced=forced)
    record = selection.record(plan, mode="affected", map_sha=(code_map or {}).get("sha"), last=last, files=files)
    if made is not None:
        record["map_seconds"] = made["seconds"]
    progress.phase(f"selection: {record['run']} of {len(cases)} benchmark(s) to run"
                   + (f" ({plan.full_run})" if plan.full_run else ""))
    chosen = set(plan.selected)
    return [c for c in cases if c["name"] in chosen], record, made


def _preload(worker: WorkerProcess, directory: str, suite: str, options: dict | None = None) -> dict:
    """List the benchmarks under ``directory`` (convention ``suite``, with its ``options``) and import
    them into the side's fork server.

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
        Listing.from_json(listing)  # the worker ran the benchmarks' code: its listing is checked by type
    except ProtocolError as exc:
        raise UserError(f"cannot list benchmarks in {directory}: the worker broke the protocol: {exc}") from None
    return listing


def _intent(req: CompareRequest, root: Path, revs: dict[str, Revision]) -> dict:
    """``intent`` of results.json: the PR's text when given, always with the commits and the diff."""
    from ..intent.git import from_git

    found = from_git(root, revs["base"].sha, revs["head"].sha, title=req.pr.title,
                                body=req.pr.body, labels=req.pr.labels)
    found["source"] = "pull request and commits" if req.pr.given() else "commits"
    return found
