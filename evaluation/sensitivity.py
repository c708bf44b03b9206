"""Does ``perfgate compare`` decide right at every magnitude and duration, within its budget?

A benchmark, not a test: it prints tables and writes them with ``--write``. Every row runs the
real pipeline (git worktrees, two fork servers, fresh process pairs, paired interleaved rounds,
the looks, futility, Benjamini–Hochberg) on generated repositories whose benchmarks are pure-Python
loops (time linear in a count, so a change can be injected exactly) or torch operators:

- ``aa``: A/A, head touches only a README; every ``regression``/``improvement`` is false.
  25 benchmarks per compare, ~25 µs to ~2 ms per call. Goal: 0 false in ≥ 200, ≥ 80 % ``unchanged``.
- ``edit``: A/A′, what a real pull request is to most of the benchmarks it does not touch: head
  doubles the first benchmark's work and adds a function to the library every benchmark imports,
  so the other benchmarks run identical code in a revision whose files (and so heap and code
  layout) differ. Every ``regression``/``improvement`` among those is false; the first must be a
  regression. Goal: as A/A.
- ``injected``: head does 1, 2, 5, 10 % more work (threshold = size for 1 and 2 %, else 2 %).
- ``magnitudes``: head takes ×m the work, m in 0.001, 0.01, 0.1, 0.5, 2, 10, 100, 1000, and
  ×1.02 / ×1/1.02 (faster and slower): the right direction, a finite interval, the seconds to the
  verdict. Goal: ≥ 95 % right from 2 %, 100 % from 10× with ≤ 10 s of timing.
- ``durations``: A/A and a 10× change at ~1 µs, ~100 ms and ~1 s per call.
- ``torch``: A/A and ×2 of four torch operators (matmul, softmax, layer norm, gelu).
- ``budget``: 25 benchmarks with ``--max-time 30``: the budget kept, what was cut short.

Every compare's wall time is checked against its ``--max-time`` (goal: within 10 %).

Usage::

    python evaluation/sensitivity.py                     # aa (8 compares) + injected
    python evaluation/sensitivity.py --study magnitudes --study durations --study torch --study budget
    python evaluation/sensitivity.py --all --write evaluation/RESULTS_sensitivity.md
    python evaluation/sensitivity.py --smoke             # every study at a toy size (CI: seconds)
    python evaluation/sensitivity.py --study aa --compares 1 --perfgate ../perfgate-old   # another checkout
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, SPIN, compare  # noqa: E402 - the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit import gitrepo  # noqa: E402

SIZES = [0.01, 0.02, 0.05, 0.10]
MAGNITUDES = [0.001, 0.01, 0.1, 0.5, 1 / 1.02, 1.02, 2.0, 10.0, 100.0, 1000.0]
#: Where ``--keep`` copies each compare's results.json (None: nowhere).
KEEP: Path | None = None
STUDIES = ("aa", "edit", "injected", "magnitudes", "durations", "torch", "budget")
#: The smoke's budget per compare, seconds: 20 where a verdict is asserted (a loaded 2-CPU
#: machine decides ×0.01 and ×100 in it; at 10 s, ×100 was not), 10 where only the tables are
#: or a ×10 is decided in a few seconds (CI's time).
SMOKE_SECONDS = {"aa": 10, "injected": 10, "torch": 10, "durations": 10}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fixed(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"

def _counts(k: int, lo: int = 500, hi: int = 40000) -> list[int]:
    """Loop counts from ~25 µs to ~2 ms per call on this machine (default), log-spaced."""
    return [int(lo * (hi / lo) ** (i / max(k - 1, 1))) for i in range(k)]


def spin_seconds_per_count() -> float:
    """Seconds one iteration of :data:`harness.SPIN`'s loop takes here (to size durations)."""
    ns: dict = {}
    exec(SPIN, ns)
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        ns["spin"](200_000)
        best = min(best, time.perf_counter() - t0)
    return best / 200_000


#: What the ``edit`` study's head adds to the library: code no benchmark calls.
EXTRA_FUNCTION = ["def unused_helper(xs):", "    return sorted(set(xs), key=lambda x: (x % 3, x))", ""]


def make_repo(path: Path, base_counts: list[int], head_counts: list[int] | None = None,
              head_extra: list[str] = ()) -> Path:
    """Repo with one ``bench_wNN`` per count; head's counts are ``head_counts`` (None: A/A, a
    README change only) and its library also has the lines ``head_extra``."""
    def lib(counts: list[int], extra: list[str] = ()) -> str:
        return SPIN + "\n".join(["", *extra, "COUNTS = [", *(f"    {c}," for c in counts), "]", ""])

    bench = ["import functools", "import worklib", ""]
    for i in range(len(base_counts)):
        bench += [f"def bench_w{i:02d}(device):", f"    return functools.partial(worklib.spin, worklib.COUNTS[{i}])", ""]
    base = {"benchmarks/bench_work.py": "\n".join(bench), "worklib.py": lib(base_counts)}
    head = None if head_counts is None else {"worklib.py": lib(head_counts, head_extra)}
    return _commit_sides(path, base, head)


def _commit_sides(path: Path, base_files: dict, head_files: dict | None) -> Path:
    """``base_files`` (and a README) as branch ``base``, then ``head_files`` (and a README change)
    as branch ``head``."""
    return gitrepo.make_repo(path, {**base_files, "README.md": "base\n"},
                             {**(head_files or {}), "README.md": "head\n"})


TORCH_BENCH = '''import torch

REPEAT = {repeat}

def _rep(f):
    def g():
        for _ in range(REPEAT):
            f()
    return g

def bench_matmul(device):
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    return _rep(lambda: a @ b)

def bench_softmax(device):
    x = torch.randn(512, 1024)
    return _rep(lambda: torch.softmax(x, -1))

def bench_layer_norm(device):
    ln = torch.nn.LayerNorm(1024)
    x = torch.randn(256, 1024)
    return _rep(lambda: ln(x))

def bench_gelu(device):
    x = torch.randn(1 << 18)
    return _rep(lambda: torch.nn.functional.gelu(x))
'''


def make_torch_repo(path: Path, head_repeat: int | None) -> Path:
    """Four torch operators; head repeats each ``head_repeat`` times (None: A/A)."""
    bench = "benchmarks/bench_t.py"
    return _commit_sides(path, {bench: TORCH_BENCH.format(repeat=1)},
                         {bench: TORCH_BENCH.format(repeat=head_repeat)} if head_repeat else None)


def run_compare(repo: Path, out: Path, threshold: float, extra: list[str], perfgate_root: Path | None = None,
                max_time: float | None = None) -> dict:
    """One real ``perfgate compare`` (profiling off), in this process or (``perfgate_root``) with
    another checkout's runner in a subprocess; its document, wall time and budget check."""
    args = ["--threshold", str(threshold), "--no-profile", *extra]
    if max_time is not None:
        args += ["--max-time", str(max_time)]
    outcome = compare(repo, out, *args, checkout=perfgate_root)
    if outcome.code != 0:
        raise SystemExit(f"compare {out.name} exited {outcome.code}")
    doc, wall = outcome.doc, outcome.wall
    if KEEP is not None:  # --keep: every compare's results.json, for re-analysis
        KEEP.mkdir(parents=True, exist_ok=True)
        (KEEP / f"{out.parent.name}-{out.name}.json").write_text(json.dumps(doc))
    budget = doc["settings"].get("max_time") or max_time or 900.0
    return {"doc": doc, "wall": wall, "max_time": budget, "within_budget": wall <= 1.1 * budget}


def _verdicts(doc: dict) -> list[str]:
    return [b["change"]["verdict"] for b in doc["benchmarks"]]


def _aa_summary(rows: list[dict]) -> dict:
    changes = [b["change"] for r in rows for b in r["doc"]["benchmarks"]]
    verdicts = [c["verdict"] for c in changes]
    inconclusive = [c for c in changes if c["verdict"] == "inconclusive"]
    return {"comparisons": len(verdicts), "false": sum(v in ("regression", "improvement") for v in verdicts),
            "unchanged": verdicts.count("unchanged"), "inconclusive": len(inconclusive),
            "futile": sum(bool(c.get("futile")) for c in inconclusive),
            "median_pairs": statistics.median(c.get("process_pairs") or 0 for c in changes) if changes else None,
            "pair_sd_median": statistics.median(c["pair_sd"] for c in changes if c.get("pair_sd") is not None)
            if any(c.get("pair_sd") is not None for c in changes) else None,
            "wall_median": statistics.median(r["wall"] for r in rows) if rows else None,
            "max_abs_error": max((abs(c["ratio"] - 1) for c in changes if c.get("ratio")), default=None),
            "budget_kept": sum(r["within_budget"] for r in rows), "compares": len(rows)}


# -- the studies --------------------------------------------------------------------------------

def study_aa(tmp: Path, args, root) -> dict:
    rows = []
    for i in range(args.compares):
        r = run_compare(make_repo(tmp / f"aa{i}-repo", _counts(args.k)), tmp / f"aa{i}", 0.02, args.extra, root)
        rows.append(r)
        v = _verdicts(r["doc"])
        print(f"A/A compare {i + 1}/{args.compares}: {dict((x, v.count(x)) for x in sorted(set(v)))} in {r['wall']:.0f} s",
              flush=True)
    return {"aa": _aa_summary(rows)}


def study_edit(tmp: Path, args, root) -> dict:
    """A/A′: head doubles benchmark 0's loop count and adds :data:`EXTRA_FUNCTION` to the library;
    benchmarks 1… are summarised as A/A (their verdicts are false if not unchanged/inconclusive)."""
    rows, changed, above = [], [], 0
    for i in range(args.compares):
        counts = _counts(args.k)
        repo = make_repo(tmp / f"edit{i}-repo", counts, [2 * counts[0], *counts[1:]], EXTRA_FUNCTION)
        r = run_compare(repo, tmp / f"edit{i}", 0.02, args.extra, root)
        first = next(b for b in r["doc"]["benchmarks"] if b["name"].endswith("bench_w00"))
        changed.append(first["change"]["verdict"])
        above += int((first["change"].get("ci_low") or 0.0) > 1.0)
        untouched = dict(r, doc={**r["doc"], "benchmarks": [b for b in r["doc"]["benchmarks"] if b is not first]})
        rows.append(untouched)
        v = _verdicts(untouched["doc"])
        print(f"A/A' compare {i + 1}/{args.compares}: untouched {dict((x, v.count(x)) for x in sorted(set(v)))}, "
              f"the doubled one {first['change']['verdict']} in {r['wall']:.0f} s", flush=True)
    # changed_above: the doubled one's interval lies above 1 (a regression, or inconclusive because the
    # budget ended before more pairs could carry it through Benjamini–Hochberg)
    return {"edit": {**_aa_summary(rows), "changed_found": changed.count("regression"), "changed": len(changed),
                     "changed_above": above, "changed_verdicts": changed}}


def study_injected(tmp: Path, args, root) -> dict:
    out = []
    for size in (SIZES if not args.smoke else [0.10]):
        threshold = size if size <= 0.02 else 0.02
        counts = _counts(args.k)
        r = run_compare(make_repo(tmp / f"inj{size}-repo", counts, [round(c * (1 + size)) for c in counts]),
                        tmp / f"inj{size}", threshold, args.extra, root)
        bs = r["doc"]["benchmarks"]
        secs = [b["change"]["seconds"] for b in bs if b["change"]["verdict"] == "regression"]
        row = {"size": size, "threshold": threshold, "n": len(bs),
               "found": sum(b["change"]["verdict"] == "regression" for b in bs),
               "verdicts": {v: _verdicts(r["doc"]).count(v) for v in sorted(set(_verdicts(r["doc"])))},
               "median_ratio": _median([b["change"]["ratio"] for b in bs if b["change"]["ratio"]]),
               "median_seconds": statistics.median(secs) if secs else None, "wall": r["wall"],
               "within_budget": r["within_budget"]}
        out.append(row)
        print(f"+{size:.0%} at threshold {threshold:.0%}: {row['found']}/{row['n']} found, {row['verdicts']}, "
              f"compare {row['wall']:.0f} s", flush=True)
    return {"injected": out}


def study_magnitudes(tmp: Path, args, root) -> dict:
    """Each magnitude on benchmarks of ~50 µs to ~2 ms per call (base), twice."""
    out = []
    mags = (args.magnitude or MAGNITUDES) if not args.smoke else [0.01, 100.0]
    # The smoke's ×100 heads stay near 3 and 30 ms per call (base ~30 and ~300 µs): at ~2 ms,
    # head's 160 ms calls fit 2 process pairs in its 20 s on a loaded CI machine, and the t
    # interval of 2 pairs (1 df) left a 107× slowdown inconclusive (CI, 2026-12-07)
    base_counts = _counts(5, 1000, 40000) if not args.smoke else _counts(2, 1000, 8000)
    for m in mags:
        for rep in range(args.repeats):
            head = [max(1, round(c * m)) for c in base_counts]
            r = run_compare(make_repo(tmp / f"mag{m:g}-{rep}-repo", base_counts, head), tmp / f"mag{m:g}-{rep}",
                            0.02, args.extra, root)
            want = "regression" if m > 1 else "improvement"
            for b, c, h in zip(r["doc"]["benchmarks"], base_counts, head):
                ch = b["change"]
                out.append({"magnitude": m, "nominal": h / c, "verdict": ch["verdict"], "right": ch["verdict"] == want,
                            "ratio": ch["ratio"], "ci": (ch["ci_low"], ch["ci_high"]),
                            "finite": ch["ci_low"] is not None and math.isfinite(ch["ci_low"])
                            and math.isfinite(ch["ci_high"]),
                            "seconds": ch["seconds"], "timing_s": ch.get("timing_seconds"),
                            "pairs": ch.get("process_pairs"),
                            "base_s": (b.get("base") or {}).get("median"), "wall": r["wall"],
                            "within_budget": r["within_budget"]})
            got = [x for x in out if x["magnitude"] == m]
            print(f"×{m:g}: {sum(x['right'] for x in got)}/{len(got)} right, max {max(x['seconds'] for x in got):.1f} s "
                  f"to verdict ({max(x['timing_s'] or 0 for x in got):.1f} s of timing), compare {r['wall']:.0f} s",
                  flush=True)
    return {"magnitudes": out}


def study_durations(tmp: Path, args, root) -> dict:
    """A/A and ×10 at ~1 µs, ~100 ms and ~1 s per call."""
    per_count = spin_seconds_per_count()
    plan = ([(1e-6, 25, args.duration_compares), (0.1, 4, 1), (1.0, 2, 1)] if not args.smoke
            else [(0.01, 1, 1)])  # the smoke: both kinds once (CI's time; the ~1 µs path is the A/A's)
    out = []
    for seconds, k, compares in plan:
        count = max(1, round(seconds / per_count))
        counts = [count] * k
        for kind in ("A/A", "×10"):
            # the ×10 compares of slow benchmarks hold one benchmark (a 10 s head call shows it)
            ks = counts if kind == "A/A" or seconds < 0.1 else counts[:1]
            head = None if kind == "A/A" else [c * 10 for c in ks]
            rows = []
            for i in range(compares if kind == "A/A" else 1):
                tag = f"dur{seconds:g}-{'aa' if kind == 'A/A' else 'x10'}{i}"
                rows.append(run_compare(make_repo(tmp / f"{tag}-repo", ks, head), tmp / tag, 0.02, args.extra, root))
            changes = [b["change"] for r in rows for b in r["doc"]["benchmarks"]]
            row = {"duration": seconds, "kind": kind, "n": len(changes),
                   "verdicts": {v: [c["verdict"] for c in changes].count(v) for v in sorted({c["verdict"] for c in changes})},
                   "median_base_s": statistics.median((b.get("base") or {}).get("median") or 0
                                                      for r in rows for b in r["doc"]["benchmarks"]),
                   "rounds_per_pair": sorted({c.get("rounds_per_pair") for c in changes if c.get("rounds_per_pair")}),
                   "max_seconds": max(c["seconds"] for c in changes), "wall": max(r["wall"] for r in rows),
                   "max_time": rows[0]["max_time"], "within_budget": all(r["within_budget"] for r in rows)}
            out.append(row)
            print(f"{seconds:g} s per call, {kind}: {row['verdicts']}, compare {row['wall']:.0f} s", flush=True)
    return {"durations": out}


def study_torch(tmp: Path, args, root) -> dict:
    out = []
    for kind, repeat, compares in (("A/A", None, args.torch_aa), ("×2", 2, 1)):
        rows = [run_compare(make_torch_repo(tmp / f"torch{kind[-1]}{i}-repo", repeat), tmp / f"torch{kind[-1]}{i}",
                            0.02, args.extra, root) for i in range(compares if not args.smoke else 1)]
        changes = [b["change"] for r in rows for b in r["doc"]["benchmarks"]]
        out.append({"kind": kind, "n": len(changes),
                    "verdicts": {v: [c["verdict"] for c in changes].count(v) for v in sorted({c["verdict"] for c in changes})},
                    "ratios": [round(c["ratio"], 3) for c in changes if c.get("ratio")],
                    "wall": statistics.median(r["wall"] for r in rows),
                    "within_budget": all(r["within_budget"] for r in rows)})
        print(f"torch {kind}: {out[-1]['verdicts']}", flush=True)
    return {"torch": out}


def study_budget(tmp: Path, args, root) -> dict:
    out = []
    for max_time in ((30.0, 60.0) if not args.smoke else (8.0,)):
        counts = _counts(args.k)
        slow = counts[:-2] + [counts[-1] * 200, counts[-1] * 400]  # two benchmarks of ~0.4 and ~0.8 s per call
        r = run_compare(make_repo(tmp / f"budget{max_time:g}-repo", slow, [round(c * 1.01) for c in slow]),
                        tmp / f"budget{max_time:g}", 0.02, args.extra, root, max_time=max_time)
        b = r["doc"]["settings"].get("budget") or {}
        out.append({"max_time": max_time, "wall": r["wall"], "ratio": r["wall"] / max_time,
                    "within_budget": r["within_budget"], "cut_short": len(b.get("cut_short") or []),
                    "n": len(r["doc"]["benchmarks"]), "startup_s": b.get("startup_s"), "timing_s": b.get("timing_s")})
        print(f"--max-time {max_time:g}: wall {r['wall']:.1f} s ({r['wall'] / max_time:.0%}), "
              f"{out[-1]['cut_short']} cut short", flush=True)
    return {"budget": out}


RUN = {"aa": study_aa, "edit": study_edit, "injected": study_injected, "magnitudes": study_magnitudes, "durations": study_durations,
       "torch": study_torch, "budget": study_budget}


# -- tables -----------------------------------------------------------------------------------

def render(res: dict, args) -> str:
    import platform

    from runner.environment import cpu_model

    lines = ["## Sensitivity, magnitudes, durations and the budget", "",
             f"`python evaluation/sensitivity.py {' '.join(args.argv)}`".replace("  ", " ")
             + f" on {cpu_model()}, Python {platform.python_version()}, default settings, profiling off, "
             "no CPU isolation by hand (the machine's other processes on every CPU).", ""]
    for key, title, first in (("aa", "A/A (identical revisions)", "comparisons"),
                              ("edit", "A/A′ (head doubles one benchmark's work and adds a function to the library "
                                       "the others import)", "untouched comparisons")):
        if key not in res:
            continue
        a = res[key]
        found = key == "edit"  # the doubled benchmark: found as a regression?
        lines += [f"### {title}", "",
                  f"| {first} | false verdicts | unchanged | inconclusive (futile) | median pairs | "
                  "pairs' sd (median) | wall per compare | largest \\|ratio−1\\| | "
                  + ("doubled one found | " if found else "") + "budget kept |",
                  "|---:" * (10 if found else 9) + "|",
                  f"| {a['comparisons']} | {a['false']} | {a['unchanged']} ({a['unchanged'] / max(1, a['comparisons']):.0%}) | "
                  f"{a['inconclusive']} ({a['futile']}) | {a['median_pairs']} | "
                  f"{(a['pair_sd_median'] or 0) * 100:.2f} % | {a['wall_median']:.0f} s | "
                  f"{(a['max_abs_error'] or 0) * 100:.2f} % | "
                  + (f"{a['changed_found']}/{a['changed']} | " if found else "") + f"{a['budget_kept']}/{a['compares']} |", ""]
    if "injected" in res:
        lines += ["### Injected slowdowns", "", "| slowdown | threshold | found | verdicts | median ratio | "
                  "median time to verdict | compare |", "|---:|---:|---:|---|---:|---:|---:|"]
        for r in res["injected"]:
            v = ", ".join(f"{n} {k}" for k, n in r["verdicts"].items())
            mt = f"{r['median_seconds']:.1f} s" if r["median_seconds"] else "–"
            lines.append(f"| {r['size']:.0%} | {r['threshold']:.0%} | {r['found']}/{r['n']} | {v} | "
                         f"{_fixed(r['median_ratio'], 4)} | {mt} | {r['wall']:.0f} s |")
        lines.append("")
    if "magnitudes" in res:
        lines += ["### Every magnitude (head = base × m in work; base ~50 µs – 2 ms per call)", "",
                  "| m | right verdict | finite interval | interval covers the nominal m | median estimate | "
                  "median / max seconds to verdict | of which timing (median / max) | median pairs |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for m in sorted({x["magnitude"] for x in res["magnitudes"]}):
            got = [x for x in res["magnitudes"] if x["magnitude"] == m]
            cover = sum(1 for x in got if x["finite"] and x["ci"][0] <= x["nominal"] <= x["ci"][1])
            est = _median([x["ratio"] for x in got if x["ratio"]])
            lines.append(f"| {m:g} | {sum(x['right'] for x in got)}/{len(got)} | {sum(x['finite'] for x in got)}/{len(got)} | "
                         f"{cover}/{len(got)} | {'–' if est is None else f'{est:.4g}'} | "
                         f"{statistics.median(x['seconds'] for x in got):.1f} / "
                         f"{max(x['seconds'] for x in got):.1f} s | {statistics.median(x['timing_s'] or 0 for x in got):.1f} / "
                         f"{max(x['timing_s'] or 0 for x in got):.1f} s | {statistics.median(x['pairs'] or 0 for x in got):g} |")
        lines += ["", "The nominal m is the ratio of the loop counts; at ×0.001 and ×0.01 a call's fixed cost "
                  "(the Python call itself) stays, so the true ratio is above m and an interval may rightly miss it.", ""]
    if "durations" in res:
        lines += ["### Every duration", "", "| per call | change | comparisons | verdicts | rounds per pair | "
                  "longest benchmark | compare | --max-time kept |", "|---:|---|---:|---|---|---:|---:|---:|"]
        for r in res["durations"]:
            v = ", ".join(f"{n} {k}" for k, n in r["verdicts"].items())
            lines.append(f"| {_fmt_s(r['median_base_s'])} | {r['kind']} | {r['n']} | {v} | {r['rounds_per_pair']} | "
                         f"{r['max_seconds']:.0f} s | {r['wall']:.0f} s | {'yes' if r['within_budget'] else 'NO'} |")
        lines.append("")
    if "torch" in res:
        lines += ["### torch operators (matmul, softmax, layer norm, gelu)", "",
                  "| change | comparisons | verdicts | estimates | compare (median) |", "|---|---:|---|---|---:|"]
        for r in res["torch"]:
            v = ", ".join(f"{n} {k}" for k, n in r["verdicts"].items())
            lines.append(f"| {r['kind']} | {r['n']} | {v} | {', '.join(map(str, r['ratios'][:8]))} | {r['wall']:.0f} s |")
        lines.append("")
    if "budget" in res:
        lines += ["### The budget kept (25 benchmarks, two of them 0.4 and 0.8 s per call, +1 %)", "",
                  "| --max-time | compare wall | of the budget | benchmarks cut short | start-up | timing |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for r in res["budget"]:
            lines.append(f"| {r['max_time']:g} s | {r['wall']:.1f} s | {r['ratio']:.0%} | {r['cut_short']}/{r['n']} | "
                         f"{r['startup_s']:.1f} s | {r['timing_s']:.1f} s |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _fmt_s(x: float) -> str:
    from runner.report.units import fmt_time

    return fmt_time(x)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", action="append", choices=STUDIES, help="which studies (default: aa and injected)")
    ap.add_argument("--all", action="store_true", help="every study")
    ap.add_argument("--compares", type=int, default=8, help="A/A compares (default 8 × 25 = 200 comparisons)")
    ap.add_argument("--benchmarks-per-compare", dest="k", type=int, default=25)
    ap.add_argument("--magnitude", type=float, action="append",
                    help="only these magnitudes (repeatable; default every one of MAGNITUDES)")
    ap.add_argument("--repeats", type=int, default=2, help="compares per magnitude (5 benchmarks each)")
    ap.add_argument("--torch-aa", type=int, default=5, help="torch A/A compares (4 benchmarks each)")
    ap.add_argument("--duration-compares", type=int, default=2, help="A/A compares of 25 benchmarks of ~1 µs")
    ap.add_argument("--smoke", action="store_true", help="every study at a toy size (seconds; for CI)")
    ap.add_argument("--aa-only", action="store_true", help="= --study aa")
    ap.add_argument("--write", default="", help="write the tables to this file")
    ap.add_argument("--json", default="", help="write the raw rows to this JSON file")
    ap.add_argument("--keep", default="", help="copy each compare's results.json into this folder")
    ap.add_argument("--perfgate", default="", help="run another perfgate checkout's runner (e.g. an older commit)")
    ap.add_argument("extra", nargs="*", help="extra flags for perfgate compare (after --)")
    args = ap.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    studies = list(STUDIES) if args.all or args.smoke else (args.study or (["aa"] if args.aa_only else ["aa", "injected"]))
    if args.smoke:
        args.compares, args.k, args.repeats, args.torch_aa, args.duration_compares = 1, 3, 1, 1, 1
    root = Path(args.perfgate).resolve() if args.perfgate else None
    global KEEP
    KEEP = Path(args.keep) if args.keep else None
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="perfgate-eval-") as t:
        for study in studies:
            budget = ["--max-time", str(SMOKE_SECONDS.get(study, 20))] if args.smoke else []
            res.update(RUN[study](Path(t) / study, argparse.Namespace(
                **{**vars(args), "extra": [*args.extra, *budget]}), root))
    text = render(res, args)
    print("\n" + text)
    if args.write:
        Path(args.write).write_text(text)
        print(f"written to {args.write}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
