"""``perfgate run``: absolute times of one revision (the history runs on the default branch).

Each benchmark is set up (warm-up, calibration) and sampled for ``max(min_rounds, 16)``
samples or until its share of ``max_time`` is spent; the result is a schema_version 1
document with ``base: null`` and, per benchmark, ``head`` carrying the median with a
distribution-free confidence interval (:func:`runner.stats.median_interval`), ``change: null``.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import config as config_mod
from .. import measures
from .. import results as results_mod
from ..protocol import Failure, MeasureReply, MeasureRequest, SampleReply, SampleRequest, SetupReply, SetupRequest
from . import suites
from ..selection import matches
from .machine_facts import examine
from ..environment import capture
from ..errors import UserError
from .conditions import timer_description
from .measured import with_memory_sides
from .workers import WorkerFailure, WorkerProcess, ask, start_workers
from ..git import repo_root, resolve
from .revisions import Checkouts

def run_single(repo: str, rev: str, out: Path, *, benchmarks: str | None = None, filter: str | None = None,
               overrides: dict | None = None, progress=None, config_file: str | None = None,
               code_map: bool = True) -> dict:
    """Benchmark one revision; writes and returns ``OUT/results.json``.

    With ``code_map`` (the default) a pass of its own first records which files of the repository
    each benchmark runs (``code_map`` of results.json, :mod:`runner.pipeline.mapping`), within
    :data:`~runner.pipeline.mapping.MAP_BUDGET_SHARE` of ``max_time``; the timing shares what it leaves.

    Raises:
        UserError: bad repository, ref, configuration, or no benchmarks.
    """
    from .pairs import NoProgress

    progress = progress or NoProgress()
    root = repo_root(repo)
    sha = resolve(root, rev)
    out.mkdir(parents=True, exist_ok=True)
    with Checkouts(root, out) as co:
        revision = co.add("head", rev, sha)
        file_cfg = config_mod.load_file(config_file) if config_file else config_mod.load(revision.path)[0]
        cfg = file_cfg.override(**(overrides or {}))
        if cfg.install:
            co.install(revision, cfg.install)
        if benchmarks:
            bench_dir = Path(benchmarks).resolve()
            suite = suites.detect_in(bench_dir, cfg.suite, cfg)
        else:
            found = suites.detect(revision.path, cfg.suite, cfg.benchmarks, cfg)
            bench_dir, suite = revision.path / found.directory, found.kind
        if not bench_dir.is_dir():
            raise UserError(f"no benchmark directory {bench_dir}")
        doctor = examine([out])  # before the worker starts: the GPU idle, nothing of ours on it
        workers, worker_conditions = start_workers({"head": revision}, cfg, out / "logs")
        worker = workers["head"]
        try:
            try:
                options = suites.options(suite, cfg)
                listing = worker.preload(str(bench_dir), suite, options)
                env = worker.request("env")
            except WorkerFailure as exc:
                raise UserError(f"the worker could not start: {exc}") from None
            cases = [c for c in listing.get("benchmarks", []) if matches(c["name"], filter)]
            skipped = [dict(s) for s in listing.get("skipped") or [] if matches(s["name"], filter)]
            if not cases and not listing.get("errors") and not skipped:
                raise UserError(f"no benchmarks found in {bench_dir}" + (f" matching {filter!r}" if filter else ""))
            mapped = None
            if code_map and cases:
                from .mapping import MAP_BUDGET_SHARE, map_pass, relative_dir

                t0 = time.monotonic()
                mapped = map_pass(worker, str(bench_dir), cases, revision.path, sha=sha,
                                  rel_bench_dir=relative_dir(bench_dir, revision.path), options=options,
                                  deadline=t0 + MAP_BUDGET_SHARE * cfg.max_time, progress=progress)
            timing_budget = cfg.max_time - (mapped or {}).get("seconds", 0.0)
            progress.start(len(cases))
            entries = []
            measured_groups: dict[str, list[dict]] = {}
            for case in cases:
                if case.get("measures") == "self":
                    measured_groups.setdefault(str(case.get("group") or case["name"]), []).append(case)
            for group in measured_groups.values():
                entries += _measure_group(worker, str(bench_dir), group, cfg, options,
                                          timing_budget * len(group) / len(cases), progress)
            for i, case in enumerate(cases):
                if case.get("measures") == "self":
                    continue
                progress.benchmark(i, case["name"])
                entry, skip = _measure_one(worker, str(bench_dir), case, cfg, timing_budget / len(cases), progress,
                                           cfg.sample_time(env.get("device")), options)
                if skip:
                    skipped.append({"name": case["name"], "file": case.get("file"), "reason": skip})
                    progress.finished(case["name"], "skipped")
                    continue
                entries.append(entry)
                progress.finished(case["name"], "failed" if entry["head"]["error"] else "measured")
            entries += [results_mod.measured(e["file"], e["file"], results_mod.side(error=e["error"]))
                        for e in listing.get("errors", [])]
        finally:
            worker.close()
    doc = results_mod.new_results(
        repository=str(root), base=None, head={"ref": rev, "sha": sha},
        environment={**capture({k: v for k, v in env.items() if k not in ("cpus", "threads")}, None),
                     "worker": {**worker_conditions, "timer": timer_description(env.get("device")),
                                "sides": {"head": {"cpus": env.get("cpus"), "torch_threads": env.get("threads")}}},
                     "doctor": doctor},
        settings={"threshold": cfg.threshold, "alpha": cfg.alpha, "min_rounds": cfg.min_rounds, "max_time": cfg.max_time,
                  "ci_level": results_mod.MEDIAN_CI_LEVEL, "min_sample_time": cfg.sample_time(env.get("device")),
                  "suite": suite, "skipped": skipped},
        benchmarks=entries, intent=None, kind="run", **({"code_map": mapped} if mapped is not None else {}))
    results_mod.dump(doc, out / "results.json")
    return doc


def _measure_group(worker: WorkerProcess, bench_dir: str, cases: list[dict], cfg, options: dict, budget: float,
                   progress) -> list[dict]:
    """The entries of the benchmarks of one self-measured group: its runs, each in a fresh process,
    until every benchmark has ``max(min_rounds, 16)`` values or the runs would end past ``budget``
    seconds (at least two runs)."""
    deadline = time.monotonic() + budget
    target = max(cfg.min_rounds, 16)
    values: dict[str, list[float]] = {c["name"]: [] for c in cases}
    error, runs, last = None, 0, 0.0
    lead = cases[0]
    while runs < target and min(map(len, values.values())) < target \
            and (runs < 2 or time.monotonic() + last <= deadline):
        t0 = time.monotonic()
        try:
            worker.new_child()
            asked = SetupRequest(dir=bench_dir, file=lead["file"], func=lead["func"], name=lead["name"],
                                 suite=lead.get("suite"), case=lead, options=options,
                                 min_sample_time=cfg.sample_time("cpu"), cold_cache=cfg.cold_cache)
            reply = ask(worker, asked, SetupReply, lead.get("timeout"))
            if not isinstance(reply, Failure):
                reply = ask(worker, SampleRequest(1), SampleReply, lead.get("timeout"))
        except WorkerFailure as exc:
            reply = Failure(str(exc))
        if isinstance(reply, Failure):
            error = reply.error or "the run failed"
            break
        runs += 1
        last = time.monotonic() - t0
        for name in values:
            values[name] += [float(v) for v in ((reply.readings or {}).get(name) or {}).get("values") or []]
        progress.rounds(lead["name"], runs, None)
    out = []
    for case in cases:
        got = values[case["name"]]
        one = results_mod.benchmark(case["name"], case.get("file"), base=None,
                                    head=results_mod.side(got, error=None if got else error or "no value reported"),
                                    change=None, family=case.get("family"), params=case.get("params"),
                                    unit=case.get("unit") or "s", direction=case.get("direction") or "smaller")
        out.append(with_memory_sides(one, case) if case.get("measure") == "memory" else one)
    return out


def _measure_one(worker: WorkerProcess, bench_dir: str, case: dict, cfg, budget: float,
                 progress, min_sample_time: float, options: dict | None = None) -> tuple[dict | None, str | None]:
    """``(entry, None)`` for a benchmark measured or failed, ``(None, reason)`` for one its suite skips."""
    deadline = time.monotonic() + budget
    target = max(cfg.min_rounds, 16)
    extra: dict = {}
    try:
        worker.new_child()  # every benchmark in a fresh process
        asked = SetupRequest(dir=bench_dir, file=case["file"], func=case["func"], name=case["name"],
                             suite=case.get("suite"), case=case, options=options or {},
                             min_sample_time=min_sample_time, cold_cache=cfg.cold_cache)
        reply = ask(worker, asked, SetupReply, case.get("timeout"))
        if isinstance(reply, Failure) and reply.skipped:
            return None, reply.skipped
        samples, peak = [], None
        while not isinstance(reply, Failure) and len(samples) < target \
                and (len(samples) < 2 or time.monotonic() < deadline):
            reply = ask(worker, SampleRequest(1), SampleReply, case.get("timeout"))
            if not isinstance(reply, Failure):
                samples.extend(reply.samples)
                peak = reply.peak_memory_bytes if peak is None else max(peak, reply.peak_memory_bytes or 0)
                progress.rounds(case["name"], len(samples), None)
        error = reply.error if isinstance(reply, Failure) else None
    except WorkerFailure as exc:
        samples, peak, error = [], None, str(exc)
    if error is None:
        # the memory measure may take its share of the benchmark's budget (runner.measures.memory_due)
        per_call = sorted(samples)[len(samples) // 2] if samples else 0.0
        memory = measures.memory_due(0, per_call, budget)
        try:
            extra = _measures(ask(worker, MeasureRequest(memory), MeasureReply, case.get("timeout")))
        except WorkerFailure as exc:  # the timing stands; say why memory is missing
            extra = {"measure_error": str(exc)}
        if not memory:
            extra["measure_error"] = measures.memory_skipped(per_call, budget)
    return results_mod.benchmark(case["name"], case["file"], base=None,
                                 head=results_mod.side(samples, peak_memory_bytes=peak, error=error, **extra),
                                 change=None, family=case.get("family"), params=case.get("params")), None


def _measures(reply: "MeasureReply | Failure") -> dict:
    """A side's ``memory`` and ``compile`` records from the worker's ``measure`` answer (one process)."""
    if isinstance(reply, Failure):
        return {"measure_error": reply.error or "measure failed"}
    out = {"memory": measures.memory_side([reply.memory]), "compile": measures.compile_side([reply.compile])}
    if reply.memory_error:
        out["measure_error"] = reply.memory_error
    return {k: v for k, v in out.items() if v is not None}
