"""How long should one sample last? Noise of the paired log-ratio against ``min_sample_time``.

A benchmark, not a test: for each candidate ``min_sample_time`` it runs identical code on both
sides the way ``perfgate compare`` does (one fork server per side under the same conditions, a
fresh process pair every ``--pair-rounds`` rounds, ABBA rounds) for ``--pairs`` process pairs, and
prints the standard deviation of ``ln(head/base)`` per round, the standard deviation of the pairs'
estimates (what the interval is made of, runner.stats.blocked_estimate), the seconds one pair
costs (set-up included), and the product that matters for the stopping rule: the half-width of
the 99 % interval reachable in 60 s (t quantile on the pairs that fit, sd / sqrt(pairs)).

    python evaluation/sample_time.py [--pairs 12] [--pair-rounds 8] [--write evaluation/RESULTS.md]
    python evaluation/sample_time.py --smoke     # a toy size: the script still runs (CI)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, SPIN  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from runner.pipeline.timing.workers import start_workers  # noqa: E402
from runner.pipeline.revisions import Revision  # noqa: E402

BENCH = "import functools\n\n" + SPIN + '''

def bench_py(device):
    return functools.partial(spin, 2000)

def bench_torch(device):
    import torch
    x = torch.randn(256, 512)
    return lambda: torch.softmax(x, -1)
'''

CANDIDATES = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05]


def measure(folder: Path, func: str, min_sample_time: float, pairs: int, pair_rounds: int) -> dict:
    from scipy import stats as sps

    from runner import stats
    from runner.config import Config

    cfg = Config(device="cpu", timeout=120)
    revs = {side: Revision(side=side, ref=side, sha=side, path=folder, python=sys.executable, sys_path=[str(folder)])
            for side in ("base", "head")}
    workers, _ = start_workers(revs, cfg, folder)
    case = {"dir": str(folder), "file": "bench_s.py", "func": func, "name": func,
            "min_sample_time": min_sample_time, "cold_cache": False}
    # a fixed warm-up of three samples in every process (compare's own, alike on both sides until
    # steady, is runner.pipeline.timing.pairs.ProcessPairs.warm_up: this study is about the sample's
    # length)
    number, warmup = None, {"base": 3, "head": 3}
    rounds_d, centers = [], []
    t0 = time.monotonic()
    try:
        for side, w in workers.items():
            w.preload(str(folder))
        for _ in range(pairs):
            for side, w in workers.items():
                w.new_child()
                resp = w.request("setup", **case, number=number, warmup_samples=warmup[side])
                assert resp["ok"], resp
                number = number or resp["number"]  # the same calls per sample on both sides, as compare does
            samples = {"base": [], "head": []}
            for r in range(pair_rounds):
                for side in (("base", "head") if r % 2 == 0 else ("head", "base")):
                    samples[side] += workers[side].request("sample", count=1)["samples"]
            d = [math.log(h / b) for b, h in zip(samples["base"], samples["head"])]
            rounds_d += d
            centers.append(stats.block_summary(samples["base"], samples["head"])[0])
    finally:
        for w in workers.values():
            w.close()
    per_pair = (time.monotonic() - t0) / pairs
    sd_pair = statistics.stdev(centers)
    fit = max(2, int(60 / per_pair))
    half = float(sps.t.ppf(0.995, fit - 1)) * sd_pair / math.sqrt(fit)
    return {"sd": statistics.stdev(rounds_d), "sd_pair": sd_pair, "s_per_pair": per_pair, "half_60s": half}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--pair-rounds", type=int, default=8)
    ap.add_argument("--write", default="", help="append the table to this markdown file")
    ap.add_argument("--smoke", action="store_true", help="2 pairs of 2 rounds, one benchmark, one sample time (CI)")
    args = ap.parse_args(argv)
    funcs, candidates = ("bench_py", "bench_torch"), CANDIDATES
    if args.smoke:
        args.pairs, args.pair_rounds, funcs, candidates = 2, 2, ("bench_torch",), [0.002]
    lines = ["## Sample duration (`min_sample_time`)", "",
             f"`python evaluation/sample_time.py --pairs {args.pairs} --pair-rounds {args.pair_rounds}`: identical code, "
             "a fresh process pair per pair; sd of ln(head/base) per round and of the pairs' estimates, seconds per "
             "pair (set-up included), and the half-width of the 99 % interval reachable in 60 s.", "",
             "| benchmark | min_sample_time | sd per round | sd of pair estimates | s per pair | ±99 % in 60 s |",
             "|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bench_s.py").write_text(BENCH)
        for func in funcs:
            for mst in candidates:
                m = measure(folder, func, mst, args.pairs, args.pair_rounds)
                line = (f"| {func} | {mst * 1e3:g} ms | {m['sd']:.2%} | {m['sd_pair']:.2%} | {m['s_per_pair']:.2f} | "
                        f"{m['half_60s']:.2%} |")
                print(line, flush=True)
                lines.append(line)
    text = "\n".join(lines) + "\n"
    if args.write:
        with open(args.write, "a") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
