"""Sensitivity and false-positive rate of ``perfgate compare`` on this machine.

A benchmark, not a test: it prints a table and writes evaluation/RESULTS.md. It runs the real
pipeline (git worktrees, two worker processes, paired interleaved sampling, the sequential
stopping rule, Benjamini–Hochberg) on generated repositories:

(a) A/A: base and head run identical code (head only touches a README). Every
    ``regression``/``improvement`` verdict is a false positive. Goal: <= 0.5 %.
(b) Injected slowdowns of 1, 2, 5 and 10 %: head does exactly that much more work in a
    pure-Python loop whose time is linear in its count. Detection = verdict ``regression``.
    1 % and 2 % are run with the practical threshold equal to the size (can perfgate resolve a
    change as large as the threshold it is asked to enforce?), 5 % and 10 % with the default
    2 % threshold. Goals: 2 % detected >= 95 %, 1 % >= 80 %, within the default budget.

Usage::

    python evaluation/sensitivity.py                 # 8 A/A compares of 25 (200 comparisons) + injected
    python evaluation/sensitivity.py --quick         # smoke run (~3 min)
    python evaluation/sensitivity.py --aa-only --compares 2
    python evaluation/sensitivity.py --aa-only --compares 1 --perfgate ../perfgate-old   # another checkout

Each compare holds ``--benchmarks-per-compare`` benchmarks of different sizes (25 µs to
2 ms per call), so A/A comparisons share worker processes as real suites do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.cli.main import main as perfgate  # noqa: E402

from gitrepo import git  # noqa: E402 - the evaluation folder is on sys.path

SIZES = [0.01, 0.02, 0.05, 0.10]


def _counts(k: int) -> list[int]:
    """Loop counts from ~25 µs to ~2 ms per call on this machine, log-spaced."""
    lo, hi = 500, 40000
    return [int(lo * (hi / lo) ** (i / max(k - 1, 1))) for i in range(k)]


def make_repo(path: Path, k: int, slowdown: float) -> Path:
    """Repo with ``k`` benchmarks; head multiplies every loop count by ``1 + slowdown``."""
    path.mkdir(parents=True)
    counts = _counts(k)

    def lib(scale: float) -> str:
        lines = ["def spin(n):", "    t = 0", "    for i in range(n):", "        t += i * i % 7", "    return t", "",
                 "COUNTS = ["]
        lines += [f"    {round(c * scale)}," for c in counts]
        lines += ["]", ""]
        return "\n".join(lines)

    bench = ["import functools", "import worklib", ""]
    for i in range(k):
        bench += [f"def bench_w{i:02d}(device):", f"    return functools.partial(worklib.spin, worklib.COUNTS[{i}])", ""]
    (path / "benchmarks").mkdir()
    (path / "benchmarks" / "bench_work.py").write_text("\n".join(bench))
    (path / "worklib.py").write_text(lib(1.0))
    (path / "README.md").write_text("base\n")
    git(path, "init", "-q", "-b", "base")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    git(path, "checkout", "-q", "-b", "head")
    (path / "README.md").write_text("head\n")
    if slowdown:
        (path / "worklib.py").write_text(lib(1.0 + slowdown))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"head: {slowdown:.0%} more work")
    return path


def run_compare(tmp: Path, tag: str, k: int, slowdown: float, threshold: float, extra: list[str],
                perfgate_root: Path | None = None) -> dict:
    repo = make_repo(tmp / f"repo-{tag}", k, slowdown)
    out = tmp / f"out-{tag}"
    args = ["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
            "--threshold", str(threshold), "--no-profile", "--quiet", *extra]
    t0 = time.monotonic()
    if perfgate_root is None:
        code = perfgate(args)
    else:  # another checkout's runner, in a subprocess
        env = dict(os.environ, PYTHONPATH=str(perfgate_root))
        code = subprocess.run([sys.executable, "-m", "runner.cli", *args], cwd=str(perfgate_root), env=env).returncode
    wall = time.monotonic() - t0
    if code != 0:
        raise SystemExit(f"compare {tag} exited {code}")
    doc = json.loads((out / "results.json").read_text())
    return {"doc": doc, "wall": wall}


def _aa_row(doc: dict, wall: float | None) -> dict:
    changes = [b["change"] for b in doc["benchmarks"]]
    return {"verdicts": [c["verdict"] for c in changes], "wall": wall, "rounds": [c["rounds"] for c in changes],
            "ratios": [c["ratio"] for c in changes],
            "between_sd": [c["between_process_sd"] for c in changes if c.get("between_process_sd") is not None],
            "pairs": [c.get("process_pairs") for c in changes if c.get("process_pairs") is not None]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compares", type=int, default=8, help="A/A compares (default 8)")
    ap.add_argument("--benchmarks-per-compare", type=int, default=25)
    ap.add_argument("--injected-benchmarks", type=int, default=0,
                    help="benchmarks per injected-slowdown compare (default: as --benchmarks-per-compare)")
    ap.add_argument("--quick", action="store_true", help="2 A/A compares of 10, sizes 2 %% and 10 %% only")
    ap.add_argument("--aa-only", action="store_true")
    ap.add_argument("--injected-only", action="store_true")
    ap.add_argument("--include-aa", nargs="*", default=[], metavar="RESULTS.json",
                    help="results.json of earlier A/A compares (same settings) to count as well")
    ap.add_argument("--write", default="", help="write the tables to this file (e.g. evaluation/RESULTS.md)")
    ap.add_argument("--perfgate", default="", help="run another perfgate checkout's runner (e.g. an older commit)")
    ap.add_argument("extra", nargs="*", help="extra flags for perfgate compare (after --)")
    args = ap.parse_args()
    k = args.benchmarks_per_compare
    n_aa = args.compares
    sizes = SIZES
    if args.quick:
        k, n_aa, sizes = 10, 2, [0.02, 0.10]

    rows_aa, rows_inj = [], []
    with tempfile.TemporaryDirectory(prefix="perfgate-eval-") as t:
        tmp = Path(t)
        aa = []
        for path in args.include_aa:
            aa.append(_aa_row(json.loads(Path(path).read_text()), None))
        root = Path(args.perfgate).resolve() if args.perfgate else None
        for i in range(0 if args.injected_only else n_aa):
            r = run_compare(tmp, f"aa{i}", k, 0.0, 0.02, args.extra, root)
            aa.append(_aa_row(r["doc"], r["wall"]))
            verdicts = aa[-1]["verdicts"]
            print(f"A/A compare {i + 1}/{n_aa}: {dict((v, verdicts.count(v)) for v in set(verdicts))} "
                  f"in {r['wall']:.0f} s", flush=True)
        all_v = [v for a in aa for v in a["verdicts"]]
        fp = sum(v in ("regression", "improvement") for v in all_v)
        sds = sorted(x for a in aa for x in a["between_sd"])
        rows_aa = {"comparisons": len(all_v), "false_positives": fp, "rate": fp / len(all_v),
                   "unchanged": all_v.count("unchanged"), "inconclusive": all_v.count("inconclusive"),
                   "median_rounds": statistics.median(r for a in aa for r in a["rounds"]),
                   "median_pairs": statistics.median(p for a in aa for p in a["pairs"]) if any(a["pairs"] for a in aa) else None,
                   "between_sd_median": statistics.median(sds) if sds else None,
                   "between_sd_p90": sds[int(0.9 * (len(sds) - 1))] if sds else None,
                   "wall_per_compare": statistics.median(a["wall"] for a in aa if a["wall"]),
                   "max_abs_ratio_error": max(abs(x - 1) for a in aa for x in a["ratios"] if x)} if aa else None
        if not args.aa_only:
            for size in sizes:
                for threshold in ([size] if size <= 0.02 else [0.02]):
                    r = run_compare(tmp, f"s{size}-t{threshold}", args.injected_benchmarks or k, size, threshold,
                                    args.extra, root)
                    bs = r["doc"]["benchmarks"]
                    det = [b["change"]["verdict"] == "regression" for b in bs]
                    secs = [b["change"]["seconds"] for b in bs if b["change"]["verdict"] == "regression"]
                    ratios = [b["change"]["ratio"] for b in bs if b["change"]["ratio"]]
                    row = {"size": size, "threshold": threshold, "n": len(bs), "detected": sum(det),
                           "rate": sum(det) / len(bs),
                           "verdicts": {v: [b["change"]["verdict"] for b in bs].count(v)
                                        for v in ("regression", "unchanged", "inconclusive", "improvement")},
                           "median_seconds_to_verdict": statistics.median(secs) if secs else None,
                           "median_ratio": statistics.median(ratios) if ratios else None,
                           "wall": r["wall"]}
                    rows_inj.append(row)
                    print(f"+{size:.0%} at threshold {threshold:.0%}: detected {row['detected']}/{row['n']} "
                          f"({row['rate']:.0%}), verdicts {row['verdicts']}, median ratio {row['median_ratio']:.4f}, "
                          f"median {row['median_seconds_to_verdict'] or float('nan'):.1f} s to verdict, "
                          f"compare {row['wall']:.0f} s", flush=True)

    text = render(rows_aa, rows_inj, k, args)
    print("\n" + text)
    if args.write:
        Path(args.write).write_text(text)
        print(f"written to {args.write}")
    return 0


def render(aa: dict, inj: list[dict], k: int, args) -> str:
    import platform

    from runner.environment import cpu_model

    command = "python evaluation/sensitivity.py" + (" --quick" if args.quick else "")
    lines = ["## Sensitivity and false-positive rate", "",
             f"`{command}` on {cpu_model()}, Python {platform.python_version()}, default settings, profiling off; "
             f"{k} benchmarks per compare (pure-Python loops, ~25 µs to ~2 ms per call).", ""]
    if aa:
        sd = (f"{aa['between_sd_median']:.2%} / {aa['between_sd_p90']:.2%}" if aa["between_sd_median"] is not None
              else "–")
        lines += ["### A/A (identical revisions)", "",
                  "| comparisons | regression/improvement | rate | unchanged | inconclusive | median rounds | "
                  "median pairs | between-process sd (median / p90) | wall per compare | largest \\|ratio−1\\| |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
                  f"| {aa['comparisons']} | {aa['false_positives']} | {aa['rate']:.2%} | {aa['unchanged']} "
                  f"({aa['unchanged'] / aa['comparisons']:.0%}) | {aa['inconclusive']} | {aa['median_rounds']:g} | "
                  f"{aa['median_pairs'] if aa['median_pairs'] is not None else '–'} | {sd} | "
                  f"{aa['wall_per_compare']:.0f} s | {aa['max_abs_ratio_error']:.2%} |", ""]
    if inj:
        lines += ["### Injected slowdowns", "",
                  "| slowdown | threshold | detected | rate | verdicts | median ratio | median time to verdict | compare |",
                  "|---:|---:|---:|---:|---|---:|---:|---:|"]
        for r in inj:
            v = ", ".join(f"{n} {k}" for k, n in r["verdicts"].items() if n)
            mt = f"{r['median_seconds_to_verdict']:.1f} s" if r["median_seconds_to_verdict"] else "–"
            lines.append(f"| {r['size']:.0%} | {r['threshold']:.0%} | {r['detected']}/{r['n']} | {r['rate']:.0%} | {v} | "
                         f"{r['median_ratio']:.4f} | {mt} | {r['wall']:.0f} s |")
        lines += ["", "Detection = verdict `regression`. With the threshold equal to the injected size the "
                  "true change sits on the band's edge, so it can never be called `unchanged`: detection "
                  "measures whether the interval excludes 1. With the default 2 % threshold a 1 % change "
                  "is, correctly, `unchanged` once the interval is narrow.", ""]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
