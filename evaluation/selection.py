"""How much does selection save on real history, and does it miss anything?

A benchmark, not a test (it prints, ``--write`` writes, a table). For each repository it replays
the last ``--commits`` first-parent commits of a fetched snapshot as if each were a pull request
against its parent:

1. the code map of the parent (``runner.pipeline.mapping.map_pass``: set-up and one call of every
   benchmark traced in a fresh worker; ``--map-every K`` maps every K-th parent and lets the
   commits between use the newest map at or before their parent — older, so a map that no longer
   fits shows up as misses, not as savings);
2. the changed paths (``git diff --name-only --no-renames parent commit``) and
   :func:`runner.selection.select` with default rules → benchmarks run / skipped, and why;
3. for up to ``--miss-commits`` commits that skipped something and changed Python code, the full
   compare of the *skipped* benchmarks (``runner.pipeline.compare``, ``--max-time`` each): a
   skipped benchmark with a ``regression`` or ``improvement`` verdict is a miss.

The suites are the benchmarks of ``evaluation/real_prs/<case>/`` written for each library's public
API plus a few of ours in ``evaluation/selection_suites/<library>/`` (one per module), copied into
one folder and run with ``--benchmarks DIR`` against each revision's checkout.

Usage::

    python evaluation/selection.py --mirrors /work/.mirror --write evaluation/RESULTS_selection.md
    python evaluation/selection.py --mirrors /work/.mirror --only torchmetrics --commits 10
    python evaluation/selection.py --smoke     # a generated repository, toy sizes (CI)

Needs the libraries' dependencies importable (evaluation/real_prs/requirements.txt).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, clone  # noqa: E402 - the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from runner import selection  # noqa: E402
from runner.config import Config  # noqa: E402
from testkit.gitrepo import git, history  # noqa: E402

#: The replayed repositories: the mirror's folder, the real_prs cases whose benchmarks form the
#: suite with ``evaluation/selection_suites/<name>/``.
REPOS = {
    "torchmetrics": {"mirror": "Lightning-AI+torchmetrics",
                     "cases": ["torchmetrics_1493", "torchmetrics_2042", "torchmetrics_2995", "torchmetrics_3103"]},
    "linear_operator": {"mirror": "cornellius-gp+linear_operator",
                        "cases": ["linop_122", "linop_64", "linop_70", "linop_93"]},
}

#: Settings of the maps and the miss compares: small, the replay runs on a shared 2-CPU machine.
#: One intra-op thread a worker: torch's two OpenMP threads on two shared vCPUs made identical
#: code differ by ±30–300 % between process pairs in the miss compares (replay of 2026-12-02,
#: 18:22 UTC, load 3), which left those compares unable to show a miss; up to 16 process pairs.
REPLAY_CONFIG = Config(min_sample_time=0.002, min_rounds=8, pair_rounds=4, max_rounds=64, timeout=120.0,
                       profile=False, cpus="all", threads=1)


def build_suite(name: str, dest: Path) -> Path:
    """Copy the suite of ``name`` (real_prs cases + selection_suites) into ``dest``; returns it."""
    dest.mkdir(parents=True, exist_ok=True)
    for case in REPOS[name]["cases"]:
        for f in (ROOT / "evaluation" / "real_prs" / case).glob("bench_*.py"):
            shutil.copy(f, dest / f.name)
    for f in (ROOT / "evaluation" / "selection_suites" / name).glob("bench_*.py"):
        shutil.copy(f, dest / f"bench_{name}_{f.name[len('bench_'):]}")
    return dest


def first_parent_pairs(clone: Path, n: int) -> list[tuple[str, str]]:
    """``[(parent, commit)]`` of the last ``n`` first-parent commits, newest first."""
    shas = git(clone, "rev-list", "--first-parent", "-n", str(n + 1), "HEAD").split()
    return [(shas[i + 1], shas[i]) for i in range(len(shas) - 1)]


def make_map(clone: Path, sha: str, suite: Path, out: Path, overhead: bool = False) -> tuple[dict, list[dict]]:
    """The code map of ``sha`` for the suite (the real map pass in real workers) and the cases listed."""
    from runner.pipeline.mapping import map_pass
    from runner.pipeline.revisions import Checkouts
    from runner.pipeline.timing.workers import start_workers

    out.mkdir(parents=True, exist_ok=True)
    with Checkouts(clone, out) as co:
        rev = co.add("head", sha, sha)
        workers, _ = start_workers({"head": rev}, REPLAY_CONFIG, out / "logs")
        worker = workers["head"]
        try:
            listing = worker.preload(str(suite), "perfgate", {})
            cases = listing.get("benchmarks") or []
            cmap = map_pass(worker, str(suite), cases, rev.path, sha=sha, rel_bench_dir="", options={},
                            deadline=float("inf"), overhead=overhead)
        finally:
            worker.close()
    cmap["errors"] = listing.get("errors") or []
    return cmap, cases


def decide(changed: list[str], names: list[str], cmap: dict | None) -> dict:
    """One replayed commit's selection (pure): ``{run, skipped, full_run, one_module, reasons}``.

    ``one_module``: the commit changes exactly one Python source file (not under tests/ or docs,
    not inert) and nothing that forces a full run — the PRs the ≥ 50 % goal is about."""
    plan = selection.select([(n, "") for n in names], changed, cmap, selection.Rules())
    sources = [p for p in changed if p.endswith(".py") and not selection.path_matches(p, selection.INERT)
               and not p.startswith(("tests/", "test/", "integrations/"))]
    return {"run": plan.selected, "skipped": plan.skipped, "full_run": plan.full_run,
            "one_module": len(sources) == 1 and plan.full_run is None, "sources": sources,
            "reasons": {c.name: c.reason for c in plan.choices}}


def summarize(rows: list[dict]) -> dict:
    """Totals over replayed commits (pure): benchmark runs saved overall and on one-module commits,
    full runs by kind, misses."""
    def saved(rs):
        total = sum(len(r["run"]) + len(r["skipped"]) for r in rs)
        return (sum(len(r["skipped"]) for r in rs) / total) if total else None

    one = [r for r in rows if r["one_module"]]
    checked = [r for r in rows if r.get("miss_check") is not None]
    return {"commits": len(rows), "saved": saved(rows), "one_module_commits": len(one), "one_module_saved": saved(one),
            "full_runs": sum(1 for r in rows if r["full_run"]), "no_change_runs": sum(1 for r in rows if not r["run"]),
            "checked_commits": len(checked), "checked_benchmarks": sum(len(r["miss_check"]["verdicts"]) for r in checked),
            "misses": sum(len(r["miss_check"]["misses"]) for r in checked),
            "traced_rows": sum(1 for r in rows if "traced_misses" in r),
            "traced_skipped": sum(len(r["skipped"]) for r in rows if "traced_misses" in r),
            "traced_misses": sum(len(r.get("traced_misses") or ()) for r in rows)}


def miss_check(clone: Path, parent: str, commit: str, suite: Path, skipped: list[str], out: Path,
               max_time: float) -> dict:
    """The full compare of the skipped benchmarks at ``parent``..``commit`` (``max_time`` seconds each):
    their verdicts, and the misses (``regression``/``improvement``)."""
    from dataclasses import replace

    from runner.pipeline.compare import CompareRequest, compare

    req = CompareRequest(repo=str(clone), base=parent, head=commit, out=out, benchmarks=str(suite),
                         config=replace(REPLAY_CONFIG, max_time=max_time * len(skipped)), names=list(skipped),
                         affected=False)
    t0 = time.monotonic()
    doc = compare(req)
    verdicts = {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"] if b.get("change")}
    intervals = {b["name"]: [b["change"].get("ci_low"), b["change"].get("ci_high")] for b in doc["benchmarks"]
                 if b.get("change") and b["change"].get("ci_low") is not None}
    return {"verdicts": verdicts, "intervals": intervals, "misses": [n for n, v in verdicts.items() if v in ("regression", "improvement")],
            "seconds": round(time.monotonic() - t0, 1)}


def traced_misses(changed: list[str], skipped: list[str], parent_map: dict, head_map: dict) -> list[str]:
    """The skipped benchmarks whose traced files at the parent *or* at the commit include a
    changed path (pure): with exact maps of both sides, a skipped benchmark that ran no changed
    file on either side ran byte-identical Python, so only what the map cannot see (native code,
    data files; those force full runs) could have moved it."""
    changed_set = set(changed)
    return [name for name in skipped
            if changed_set & set(parent_map["benchmarks"].get(name, ())) | changed_set & set(head_map["benchmarks"].get(name, ()))]


def replay(name: str, clone: Path, suite: Path, tmp: Path, n: int, map_every: int, miss_commits: int,
           max_time: float, log=print, traced_check: bool = False) -> tuple[list[dict], dict]:
    """Replay ``n`` commits of ``clone``; returns the rows (one per commit, newest first) and the map costs.

    With ``traced_check`` every commit that skipped something also gets exact maps of its parent
    and of itself (reused where one commit's map is another's parent map), and the row's
    ``traced_misses`` lists :func:`traced_misses`."""
    pairs = first_parent_pairs(clone, n)
    maps: dict[int, dict] = {}
    costs: dict = {}
    names: list[str] = []
    rows = []
    # map the parents of every map_every-th commit, oldest first reuse: commit i uses map j >= i
    for j in range(len(pairs) - 1, -1, -1):
        if j % map_every == 0 or j == len(pairs) - 1:
            t0 = time.monotonic()
            cmap, cases = make_map(clone, pairs[j][0], suite, tmp / f"map{j}", overhead=not costs)
            costs = costs or cmap.pop("costs", {})
            cmap.pop("costs", None)
            names += [c["name"] for c in cases if c["name"] not in names]  # a case older commits lack: unmapped there
            maps[j] = cmap
            log(f"{name}: mapped {pairs[j][0][:10]} ({len(cmap['benchmarks'])} benchmarks, "
                f"{time.monotonic() - t0:.1f} s)")
    for i, (parent, commit) in enumerate(pairs):
        j = min(k for k in maps if k >= i)
        changed = sorted(p for p in git(clone, "diff", "--name-only", "--no-renames", parent, commit).split("\n") if p)
        row = {"parent": parent, "commit": commit, "map_of": pairs[j][0], "changed": changed,
               "subject": git(clone, "log", "-1", "--format=%s", commit).strip()[:80],
               **decide(changed, names, maps[j]), "miss_check": None}
        rows.append(row)
    if traced_check:
        exact = {pairs[j][0]: m for j, m in maps.items()}  # the maps made above are exact for their parent

        def map_of(sha: str) -> dict:
            if sha not in exact:
                exact[sha] = make_map(clone, sha, suite, tmp / f"exact-{sha[:10]}")[0]
            return exact[sha]

        for row in rows:
            if row["skipped"]:
                row["traced_misses"] = traced_misses(row["changed"], row["skipped"], map_of(row["parent"]),
                                                     map_of(row["commit"]))
        log(f"{name}: exact maps of {len(exact)} revisions; skipped benchmarks that ran changed code: "
            f"{sum(len(r.get('traced_misses') or ()) for r in rows)}")
    # commits that skipped some benchmarks and changed the package's Python code; partial selections first
    candidates = sorted((r for r in rows if r["skipped"] and r["sources"]), key=lambda r: not r["run"])
    for row in candidates[:miss_commits]:
        row["miss_check"] = miss_check(clone, row["parent"], row["commit"], suite, row["skipped"],
                                       tmp / f"miss-{row['commit'][:10]}", max_time)
        log(f"{name}: {row['commit'][:10]} full compare of {len(row['skipped'])} skipped: "
            f"{row['miss_check']['verdicts']} ({row['miss_check']['seconds']} s)")
    return rows, costs


def _interval(ci) -> str:
    """`` [-3.1, +4.0] %`` of a head/base interval, "" without one."""
    if not ci or None in ci:
        return ""
    return f" [{100 * (ci[0] - 1):+.1f}, {100 * (ci[1] - 1):+.1f}] %"


def widest(rows: list[dict]) -> float | None:
    """The largest change (fraction, either way) the miss compares' intervals leave possible (pure)."""
    bounds = [max(abs(ci[0] - 1), abs(ci[1] - 1)) for r in rows if r.get("miss_check")
              for ci in r["miss_check"].get("intervals", {}).values() if ci and None not in ci]
    return max(bounds) if bounds else None


def table(name: str, rows: list[dict], costs: dict, args) -> str:
    s = summarize(rows)
    pct = lambda x: "—" if x is None else f"{100 * x:.0f} %"  # noqa: E731
    lines = [f"### {name}", "",
             f"{s['commits']} first-parent commits (newest {rows[0]['commit'][:10]}), maps every {args.map_every} "
             f"commit(s); {len(rows[0]['run']) + len(rows[0]['skipped'])} benchmarks.", "",
             "| | value |", "|---|---:|",
             f"| benchmark runs saved, all commits | {pct(s['saved'])} |",
             f"| commits touching one Python module | {s['one_module_commits']} |",
             f"| benchmark runs saved on those | {pct(s['one_module_saved'])} |",
             f"| full runs (something the map cannot see changed) | {s['full_runs']} |",
             f"| commits that ran nothing (no mapped code changed) | {s['no_change_runs']} |",
             f"| commits whose skipped benchmarks were fully compared | {s['checked_commits']} "
             f"({s['checked_benchmarks']} benchmarks, {args.max_time:g} s each) |",
             f"| **misses** (a skipped benchmark with a verdict) | **{s['misses']}** |",
             f"| largest change the skipped benchmarks' intervals leave possible | {pct(widest(rows))} |"]
    if s["traced_rows"]:
        lines.append(f"| skipped benchmarks that ran a changed file at the parent or the commit (exact maps of both; "
                     f"{s['traced_skipped']} skips on {s['traced_rows']} commits) | **{s['traced_misses']}** |")
    lines.append("")
    if costs:
        ratios = [c["traced_call_s"] / c["plain_call_s"] for c in costs.values()
                  if c.get("plain_call_s") and c.get("traced_call_s")]
        passes = [c["pass_s"] for c in costs.values()]
        lines += [f"Map pass: {statistics.median(passes):.2f} s a benchmark (median; a fresh process, set-up and "
                  f"one traced call); a traced warm call costs ×{statistics.median(ratios):.2f} a plain one "
                  f"(median, max ×{max(ratios):.2f}).", ""]
    lines += ["| commit | changed | run | skipped | why | full compare of the skipped |", "|---|---|---:|---:|---|---|"]
    for r in rows:
        why = r["full_run"] or ("one module" if r["one_module"] else ("; ".join(r["sources"][:2]) or "no mapped code"))
        check = "" if r["miss_check"] is None else ", ".join(
            f"{k.split('[')[0]}: {v}" + _interval(r["miss_check"].get("intervals", {}).get(k))
            for k, v in r["miss_check"]["verdicts"].items())
        lines.append(f"| `{r['commit'][:10]}` {r['subject'].replace('|', '/')} | {len(r['changed'])} | "
                     f"{len(r['run'])} | {len(r['skipped'])} | {why.replace('|', '/')[:120]} | {check} |")
    return "\n".join(lines) + "\n"


def smoke_repo(root: Path) -> Path:
    """A repository of four first-parent commits after a base: one module, a native file, docs, a shared util."""
    def module(name: str, count: int) -> str:
        return f"from .common import spin\n\ndef {name}():\n    return spin({count})\n"

    common = "def spin(n):\n    return sum(range(n))\n"
    base = {"toylib/__init__.py": "", "toylib/common.py": common,
            "toylib/a.py": module("a", 2000), "toylib/b.py": module("b", 2000)}
    history(root, [(base, "base"), ({"toylib/a.py": module("a", 2100)}, "a: tune"),
                   ({"csrc/k.cu": "// k\n"}, "a kernel"), ({"README.md": "toy\n"}, "docs"),
                   ({"toylib/common.py": common.replace("range(n))", "range(n)) + 0")}, "common")])
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--only", choices=list(REPOS))
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--map-every", type=int, default=10)
    parser.add_argument("--miss-commits", type=int, default=3, help="commits whose skipped benchmarks get a full compare")
    parser.add_argument("--max-time", type=float, default=10.0,
                        help="budget of the miss compares, seconds per skipped benchmark")
    parser.add_argument("--traced-check", action="store_true",
                        help="map the parent and the commit of every commit that skipped something, exactly, and count "
                             "the skipped benchmarks that ran a changed file on either side")
    parser.add_argument("--write", type=Path)
    parser.add_argument("--smoke", action="store_true", help="a generated repository at toy sizes (CI)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfgate-selection-") as tmp_name:
        tmp = Path(tmp_name)
        out = []
        if args.smoke:
            repo = smoke_repo(tmp / "toy")
            suite = tmp / "suite"
            suite.mkdir()
            (suite / "bench_toy.py").write_text("from toylib.a import a\nfrom toylib.b import b\n\n"
                                                "def bench_a(device):\n    return a\n\n"
                                                "def bench_b(device):\n    return b\n")
            args.map_every, args.max_time = 2, 3.0
            rows, costs = replay("toy", repo, suite, tmp, 4, 2, 1, 3.0, log=lambda *_: None,
                                 traced_check=True)
            s = summarize(rows)
            by = {r["subject"]: r for r in rows}
            assert by["a: tune"]["run"] == ["bench_a"] and by["a: tune"]["one_module"], by["a: tune"]
            assert by["a kernel"]["full_run"] and by["docs"]["run"] == [] and len(by["common"]["run"]) == 2
            assert s["checked_commits"] == 1 and costs, (s, costs)
            assert s["traced_rows"] >= 1 and s["traced_misses"] == 0, s
            # a head-side call into a changed file is a miss even where the parent's map had none
            assert traced_misses(["toylib/a.py"], ["bench_b"], {"benchmarks": {"bench_b": ["toylib/b.py"]}},
                                 {"benchmarks": {"bench_b": ["toylib/a.py", "toylib/b.py"]}}) == ["bench_b"]
            out.append(table("toy (smoke)", rows, costs, args))
        else:
            for name in ([args.only] if args.only else list(REPOS)):
                mirror = args.mirrors / REPOS[name]["mirror"] / "repo"
                if not mirror.exists():
                    print(f"{name}: no snapshot at {mirror} (fetch github:{REPOS[name]['mirror'].replace('+', '/')})",
                          file=sys.stderr)
                    continue
                repo = clone(mirror, tmp / name / "clone")
                suite = build_suite(name, tmp / name / "suite")
                rows, costs = replay(name, repo, suite, tmp / name, args.commits, args.map_every,
                                     args.miss_commits, args.max_time,
                                     log=lambda m: print(m, file=sys.stderr),
                                     traced_check=args.traced_check)
                out.append(table(name, rows, costs, args))
        text = "\n".join(out)
        print(text)
        if args.write:
            args.write.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
