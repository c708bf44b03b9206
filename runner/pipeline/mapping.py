"""The code map's pass, parent side: one fresh process per benchmark, set-up and one call traced
(:mod:`runner.worker.tracing`), within its share of the run's budget; and what a compare with
``--affected`` needs around it (the changed paths, the last measured values carried forward), and
that compare's selection (:func:`affected`: the map, the changed paths,
:func:`runner.selection.select`).

The map (``code_map`` of results.json)::

    {"sha": revision mapped, "tool": "cProfile", "root": ".", "bench_dir": "benchmarks",
     "benchmarks": {name: [repository-relative paths]}, "unmapped": {name: why},
     "seconds": wall seconds the pass took}
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import selection
from ..config import Config
from ..errors import GitError, ResultsError, UserError
from ..git import git
from .revisions import Revision
from .timing.workers import WorkerFailure, WorkerProcess

#: Share of ``max_time`` the map pass may take (the timing gets what it leaves). A benchmark the
#: pass has no time left for gets no map entry, and so always runs (runner.selection.UNMAPPED).
MAP_BUDGET_SHARE = 0.2


def map_pass(worker: WorkerProcess, bench_dir: str, cases: list[dict], root: Path, *, sha: str, rel_bench_dir: str,
             options: dict | None, deadline: float, progress=None, overhead: bool = False) -> dict:
    """Trace every case of ``cases`` (as listed by the worker) in a fresh child of ``worker``.

    Args:
        worker: the side's worker (its revision is the one mapped).
        bench_dir: the directory the cases were listed from (absolute).
        cases: the listing's benchmarks.
        root: the revision's worktree root (paths are made relative to it).
        sha: the revision's SHA (recorded).
        rel_bench_dir: the benchmark directory relative to the repository ("" when outside it).
        options: the convention's options.
        deadline: monotonic seconds after which no further benchmark is traced.
        overhead: also time one warm call plain and one traced, per benchmark, and the pass's
            wall seconds (``costs``: ``{name: {pass_s, plain_call_s, traced_call_s}}``, for
            evaluation/selection.py; not part of results.json's map).

    Returns:
        The ``code_map`` (module docstring). A failing case is in ``unmapped`` with its error;
        it never raises for a benchmark's failure.
    """
    started = time.monotonic()
    mapped: dict[str, list[str]] = {}
    unmapped: dict[str, str] = {}
    tool = None
    last_cost = 0.0
    costs: dict[str, dict] = {}
    for case in cases:
        name = case["name"]
        if time.monotonic() + last_cost > deadline:
            unmapped[name] = "not mapped: the map pass's share of the budget was spent"
            continue
        if progress is not None:
            progress.phase(f"mapping {name}")
        t0 = time.monotonic()
        try:
            worker.new_child()
            resp = worker.request("trace", dir=bench_dir, file=case.get("file"), func=case.get("func"), name=name,
                                  suite=case.get("suite"), case=case, options=dict(options or {}), root=str(root),
                                  timeout=case.get("timeout"), overhead=overhead)
        except WorkerFailure as exc:
            resp = {"ok": False, "error": str(exc)}
        last_cost = time.monotonic() - t0
        if resp.get("ok") and "files" in resp:
            mapped[name] = list(resp["files"])
            if overhead:
                costs[name] = {"pass_s": last_cost, "plain_call_s": resp.get("plain_call_s"),
                               "traced_call_s": resp.get("traced_call_s")}
            tool = tool or resp.get("tool")
        elif resp.get("skipped"):
            unmapped[name] = f"skipped by its suite: {resp['skipped']}"[:500]
        else:
            unmapped[name] = f"not mapped: {str(resp.get('error') or 'no answer')[:400]}"
    worker.end_child()
    out = {"sha": sha, "tool": tool, "root": ".", "bench_dir": rel_bench_dir, "benchmarks": mapped,
           "unmapped": unmapped, "seconds": round(time.monotonic() - started, 3)}
    if overhead:
        out["costs"] = costs
    return out


def changed_paths(root: Path, base: str, head: str) -> list[str]:
    """Repository-relative paths added, modified or deleted between ``base`` and ``head``
    (``git diff --name-only --no-renames``: a rename is its old and its new path).

    Raises:
        UserError: git cannot diff the two revisions.
    """
    try:
        out = git(root, "diff", "--name-only", "--no-renames", "-z", base, head, strip=False)
    except GitError as exc:
        raise UserError(f"cannot list the files changed between {base[:12]} and {head[:12]}: {exc}") from None
    return sorted(p for p in out.split("\0") if p)


def relative_dir(directory: str | Path, root: Path) -> str:
    """``directory`` relative to ``root`` with ``/`` (``""`` when it is outside)."""
    try:
        rel = Path(directory).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return ""
    text = rel.as_posix()
    return "" if text == "." else text


def own_file(rel_bench_dir: str, file: str | None) -> str:
    """A case's own file, repository-relative (``""`` when unknown)."""
    if not file:
        return ""
    return f"{rel_bench_dir}/{file}" if rel_bench_dir else file


def last_values(doc: dict) -> dict[str, dict]:
    """``{name: {sha, median, unit}}`` of the benchmarks a stored results.json measured (a ``perfgate
    run``'s values, or a compare's head side): what a skipped benchmark carries forward."""
    sha = (doc.get("head") or {}).get("sha")
    out = {}
    for b in doc.get("benchmarks") or []:
        side = b.get("head") or {}
        if side.get("median") is not None and not side.get("error"):
            out[b["name"]] = {"sha": sha, "median": side["median"], "unit": b.get("unit") or "s"}
    return out


def load_map(path: str) -> tuple[dict, dict]:
    """``(code_map, last_values)`` from a stored results.json given as ``--map``.

    Raises:
        UserError: the file cannot be read, is not a results.json, or holds no ``code_map``.
    """
    from .. import results as results_mod

    try:
        doc = results_mod.load(path)
    except ResultsError as exc:
        raise UserError(f"--map {path}: {exc}") from None
    if not isinstance(doc.get("code_map"), dict):
        raise UserError(f"--map {path}: it holds no code_map (make one with `perfgate run`, which records it)")
    return doc["code_map"], last_values(doc)


def affected(cases: list[dict], revs: dict[str, Revision], dirs: dict, worker: WorkerProcess,
             listing: dict | None, cfg: Config, *, map_file: str | None, force_run: list[str],
             options: dict, progress, root: Path,
             same_code: dict | None = None) -> tuple[list[dict], dict, dict | None]:
    """A selecting compare's ``(cases to measure, the selection record, the code map made here or
    None)``: the base's code map (``map_file``, ``--map FILE``; else a map pass over the base's
    benchmarks in base's ``worker``, from its ``listing``, within :data:`MAP_BUDGET_SHARE` of
    ``max_time``; none without a base listing), the paths base..head changed, the benchmarks
    ``force_run`` names forced back (selection misses), the files whose kernels compile alike
    (``same_code``, the static pass's), and :func:`runner.selection.select`."""
    base_rev = revs["base"]
    rel_bench = "" if dirs["shared"] else relative_dir(dirs["base"], base_rev.path)
    made, code_map, last = None, None, {}
    if map_file:
        code_map, last = load_map(map_file)
    elif listing is not None:
        wanted = {c["name"] for c in cases}
        progress.phase("mapping the base's benchmarks to the code they run")
        mapped = [c for c in listing.get("benchmarks", []) if c["name"] in wanted]
        code_map = made = map_pass(worker, dirs["base"], mapped, base_rev.path, sha=base_rev.sha,
                                   rel_bench_dir=rel_bench, options=options, progress=progress,
                                   deadline=time.monotonic() + MAP_BUDGET_SHARE * cfg.max_time)
    changed = changed_paths(root, base_rev.sha, revs["head"].sha)
    files = {c["name"]: own_file(rel_bench, c.get("file")) for c in cases}
    forced = {c["name"]: "a selection miss: it runs until the map is rebuilt" for c in cases
              if any(selection.matches(c["name"], p) for p in force_run)}
    plan = selection.select([(c["name"], files[c["name"]]) for c in cases], changed, code_map,
                            cfg.selection, bench_dir=rel_bench, forced=forced, same_code=same_code)
    record = selection.record(plan, mode="affected", map_sha=(code_map or {}).get("sha"), last=last,
                              files=files)
    if made is not None:
        record["map_seconds"] = made["seconds"]
    progress.phase(f"selection: {record['run']} of {len(cases)} benchmark(s) to run"
                   + (f" ({plan.full_run})" if plan.full_run else ""))
    chosen = set(plan.selected)
    return [c for c in cases if c["name"] in chosen], record, made
