"""``perfgate run``: absolute times of one revision (the history runs on the default branch).

The compare's pipeline over one side: the revision checked out and its side opened as a compare
opens its two (:mod:`.session`), its benchmarks chosen by the same rules
(:func:`runner.selection.listed`), then timed on that side alone
(:meth:`.timing.TimingPass.time_one_side`): each benchmark in a fresh process, set up, warmed up to
a steady state as a compare's process pair is, its calls per sample chosen from the warm-up, then
:func:`.stops.run_samples` samples (``max(min_rounds, 16)``; two at least, more while they end
within the benchmark's fair share of ``max_time``) and the measures after them (peak memory,
torch.compile). The document is a schema_version 1 one with ``base: null`` and, per benchmark,
``head`` carrying the median with a distribution-free confidence interval
(:func:`runner.stats.median_interval`), ``change: null``.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import results as results_mod
from ..git import commit_time, repo_root, resolve
from .timing import benchstate, stops
from .timing.benchstate import BenchState
from .timing.entries import one_side_entry, skipped_apart
from .mapping import MAP_BUDGET_SHARE, map_pass, relative_dir
from .timing.measured import one_side_entry as measured_one_side_entry
from .timing.pairs import NoProgress, Progress
from .revisions import Checkouts, Revision
from .session import Sides, bench_dirs, configuration, install, open_sides, time_one_side


def run_single(repo: str, rev: str, out: Path, *, benchmarks: str | None = None,
               filter: str | None = None, overrides: dict | None = None,
               progress: Progress | None = None, config_file: str | None = None,
               code_map: bool = True) -> dict:
    """Benchmark one revision; writes and returns ``OUT/results.json``.

    With ``code_map`` (the default) a pass of its own first records which files of the repository
    each benchmark runs (``code_map`` of results.json, :mod:`runner.pipeline.mapping`), within
    :data:`~runner.pipeline.mapping.MAP_BUDGET_SHARE` of ``max_time``; the timing shares what it
    leaves.

    Raises:
        UserError: bad repository, ref, configuration, or no benchmarks.
    """
    progress = progress or NoProgress()
    root = repo_root(repo)
    sha = resolve(root, rev)
    out = Path(out).absolute()  # the workers write into it from their own worktrees
    out.mkdir(parents=True, exist_ok=True)
    with Checkouts(root, out) as co:
        revs = {"head": co.add("head", rev, sha)}
        cfg = configuration(config_file, overrides or {}, revs["head"])
        if cfg.install:
            install(co, revs, cfg.install, progress)
        dirs = bench_dirs(benchmarks, cfg, revs)
        sides = open_sides(revs, dirs, cfg, out, progress)
        try:
            found = sides.listed(dirs, filter)
            mapped = _map(sides, revs["head"], dirs, found.cases, cfg.max_time,
                          progress) if code_map else None
            states = [BenchState(case=c) for c in found.cases]
            end = time.monotonic() + cfg.max_time - (mapped or {}).get("seconds", 0.0)
            timing = time_one_side(cfg, sides, dirs, states, progress, end,
                                   stops.run_samples(cfg.min_rounds))
        finally:
            sides.close()
    states, skipped = skipped_apart(states, found.skipped)
    entries = [measured_one_side_entry(s) if benchstate.measures_itself(s) else one_side_entry(s)
               for s in states]
    entries += [results_mod.measured(e["file"], e["file"], results_mod.side(error=e["error"]))
                for e in found.errors]
    doc = results_mod.new_results(
        repository=str(root), base=None,
        head={"ref": rev, "sha": sha, "committed_at": commit_time(root, sha)},
        environment=sides.environment(None),
        settings={"threshold": cfg.threshold, "alpha": cfg.alpha, "min_rounds": cfg.min_rounds,
                  "max_time": cfg.max_time, "ci_level": results_mod.MEDIAN_CI_LEVEL,
                  "min_sample_time": timing.min_sample_time, "suite": dirs["suite"],
                  "skipped": skipped},
        benchmarks=entries, intent=None, kind="run",
        **({"code_map": mapped} if mapped is not None else {}))
    results_mod.dump(doc, out / "results.json")
    return doc


def _map(sides: Sides, rev: Revision, dirs: dict, cases: list[dict], max_time: float,
         progress: Progress) -> dict | None:
    """The revision's code map (:func:`runner.pipeline.mapping.map_pass`, within its share of
    ``max_time``); None without benchmarks to map."""
    if not cases:
        return None
    return map_pass(sides.workers["head"], dirs["head"], cases, rev.path, sha=rev.sha,
                    rel_bench_dir=relative_dir(dirs["head"], rev.path), options=sides.options,
                    deadline=time.monotonic() + MAP_BUDGET_SHARE * max_time, progress=progress)
