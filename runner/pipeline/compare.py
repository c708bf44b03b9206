"""``perfgate compare``: refs → worktrees → workers → timing pass → profiles → results.json.

The imperative shell: it opens the two sides (:mod:`.session`), times them in process pairs,
adds profiles and intent and writes the document. Every decision is a pure function elsewhere:
what is measured (:mod:`runner.selection`), the budget (:mod:`.schedule`), the clocks
(:mod:`.clock_plan`), the stopping rule and verdicts (:mod:`.stops`, :mod:`runner.stats`), hints
(:mod:`runner.profile`), intent (:mod:`runner.intent`), the document (:mod:`runner.results`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import config as config_mod
from .. import results as results_mod
from .. import policy_source, selection
from ..config import Config
from ..git import commit_time, repo_root, resolve
from ..protocol import L2_FLUSH
from ..kernels.table import attach
from .timing import benchstate
from .timing.benchstate import BenchState
from .timing.entries import benchmark_entry, skipped_apart
from .mapping import affected
from .timing.measured import entry as measured_entry
from .timing.pairs import NoProgress, Progress
from .kernel_pass import kernel_pass
from .profiling import hint_entries
from .progress_record import ProgressRecord
from .revisions import Checkouts, Revision
from .session import BudgetClock, bench_dirs, configuration, install, open_sides, time_in_pairs


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
    #: Where the progress record goes (:mod:`.progress_record`); None: ``OUT/logs/progress.json``.
    progress_file: Path | None = None

    def __post_init__(self) -> None:
        # Absolute before anything uses it: the workers write into it from their own worktrees.
        self.out = Path(self.out).absolute()


def compare(req: CompareRequest, progress: Progress | None = None) -> dict:
    """Run the whole pipeline and write ``OUT/results.json`` (reports are the caller's).

    Raises:
        UserError: not a git repository, unknown ref, bad config, no benchmarks, a failed
            install command. Benchmark failures are not raised: they are results.
    """
    progress = progress or NoProgress()
    started = time.monotonic()  # --max-time counts from here (the install command's own time excluded)
    if req.config_file:
        config_mod.load_file(req.config_file)  # a broken --config fails before any checkout
    root = repo_root(req.repo)
    shas = {"base": resolve(root, req.base), "head": resolve(root, req.head)}
    req.out.mkdir(parents=True, exist_ok=True)
    record = ProgressRecord(req.out, req.progress_file)
    with Checkouts(root, req.out) as co:
        progress.phase("checking out base and head")
        revs = {side: co.add(side, getattr(req, side), sha) for side, sha in shas.items()}
        # The policy is the maintainers': --config FILE, else the base revision's file, never the head's.
        policy = {"config_source": "file" if req.config_file else "base",
                  "config_changed_by_head": policy_source.head_changes(revs["base"].path,
                                                                    revs["head"].path)}
        cfg = req.config or configuration(req.config_file, req.config_overrides, revs["base"])
        for note in policy_source.working_tree_notes(root, revs["base"].path,
                                                  bool(req.config_file or req.config)):
            print(f"perfgate: note: {note}", file=sys.stderr)
        # deprecated keys: each said once per compare, and recorded (settings.config_deprecated)
        for message in cfg.deprecated.values():
            print(f"perfgate: warning: {message}", file=sys.stderr)
        install_s = install(co, revs, cfg.install, progress, record) if cfg.install else 0.0
        clock = BudgetClock(started + install_s, install_s)
        return _measure(req, cfg, revs, root, progress, policy, clock, record)


def _measure(req: CompareRequest, cfg: Config, revs: dict[str, Revision], root: Path,
             progress: Progress, policy: dict, clock: BudgetClock,
             record: ProgressRecord) -> dict:
    """The two sides opened, the benchmarks chosen (:mod:`runner.selection`), timed, profiled;
    ``OUT/results.json`` written."""
    dirs = bench_dirs(req.benchmarks, cfg, revs)
    sides = open_sides(revs, dirs, cfg, req.out, progress, record)
    entries: list[dict] = []  # the last progress record names one a limit failed (record.finish)
    try:
        record.note("kernels")
        kernels = kernel_pass(cfg.gpu_arch, cfg.max_time, revs, sides.env.get("head") or {},
                              progress)
        found = sides.listed(dirs, req.filter, req.names)
        cases, code_map = found.cases, None
        selected = selection.unselected(cfg.selection.enabled, len(found.cases))
        if selection.selecting(req.affected, cfg.selection.enabled):
            cases, selected, code_map = affected(
                cases, revs, dirs, sides.workers["base"], sides.listings["base"], cfg,
                map_file=req.map_file, force_run=req.force_run, options=sides.options,
                progress=progress, root=root, same_code=kernels.get("same_code"))
        states = [BenchState(case=c) for c in cases]
        timing, telemetry, budget = time_in_pairs(cfg, sides, dirs, states, progress, clock)
        states, skipped = skipped_apart(states, found.skipped)
        judged = (timing.ci_level, cfg.memory_threshold, cfg.min_process_pairs)
        entries = [measured_entry(s, *judged) if benchstate.measures_itself(s)
                   else benchmark_entry(s, *judged) for s in states]
        entries += [results_mod.failed_file(e["file"], e["error"]) for e in found.errors]
        entries += [results_mod.removed(c["name"], c["file"]) for c in found.removed]
        unprofiled, clock.profile_s = hint_entries(timing, states, entries, req.out, telemetry,
                                                   progress, budget.profile_end, cfg.profile)
        attach(entries, kernels, code_map)
    finally:
        sides.close()
        record.finish(entries)
    environment = sides.environment(telemetry)
    settings = dict(
        threshold=cfg.threshold, alpha=cfg.alpha, min_rounds=cfg.min_rounds, max_time=cfg.max_time,
        max_rounds=cfg.max_rounds, pair_rounds=cfg.pair_rounds, looks=timing.looks,
        ci_level=timing.ci_level, eq_level=timing.eq_level, min_sample_time=timing.min_sample_time,
        cold_cache=cfg.timer_cold_cache(), l2_flush=L2_FLUSH, fail_threshold=cfg.fail_threshold,
        memory_threshold=cfg.memory_threshold, fail_on_memory_regression=cfg.fail_on_memory_regression,
        fail_on_output_change=cfg.fail_on_output_change,
        process_noise=cfg.process_noise, min_process_pairs=cfg.min_process_pairs,
        allocator=cfg.allocator, filter=req.filter, profile=cfg.profile, **policy,
        suite=dirs["suite"], skipped=skipped, looks_pairs=timing.look_pairs,
        budget=clock.record(cfg.max_time, states, unprofiled))
    if cfg.deprecated:
        settings["config_deprecated"] = list(cfg.deprecated)
    doc = results_mod.new_results(
        repository=str(root),
        base={"ref": req.base, "sha": revs["base"].sha,
              "committed_at": commit_time(root, revs["base"].sha)},
        head={"ref": req.head, "sha": revs["head"].sha,
              "committed_at": commit_time(root, revs["head"].sha)},
        environment=environment,
        settings=settings, benchmarks=entries, **_intent(req, root, revs), kernels=kernels,
        **({"selection": selected} if selected is not None else {}),
        **({"code_map": code_map} if code_map is not None else {}))
    results_mod.dump(doc, req.out / "results.json")
    return doc


def _intent(req: CompareRequest, root: Path, revs: dict[str, Revision]) -> dict:
    """``intent`` and ``claims`` of results.json, from the PR's text when given and always from
    the commits ``base..head`` and the diff (read once): the strategy a measured rule backs
    (:func:`runner.intent.precise.name_strategy`) and the quantitative claims of the text and
    the commit messages (:func:`runner.intent.claims.parse_claims`)."""
    from ..intent.claims import parse_claims
    from ..intent.git import read_change
    from ..intent.precise import name_strategy

    messages, diff = read_change(root, revs["base"].sha, revs["head"].sha)
    found = name_strategy(title=req.pr.title, body=req.pr.body, labels=req.pr.labels,
                          commit_messages=messages, diff=diff)
    found["source"] = "pull request and commits" if req.pr.given() else "commits"
    return {"intent": found,
            "claims": parse_claims(title=req.pr.title, body=req.pr.body, commits=messages)}
