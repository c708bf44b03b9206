"""How long should one sample last? Noise of the paired log-ratio against ``min_sample_time``.

A benchmark, not a test: for each candidate ``min_sample_time`` it starts one base and one head
worker on identical code (pinned to the same CPUs, as ``perfgate compare`` does), sets one
benchmark up in each, takes ``--rounds`` ABBA rounds and prints the standard deviation of
``ln(head/base)`` per round, the rounds per second, and the product that matters for the
stopping rule: the standard error reachable in 10 s of sampling (sd / sqrt(rounds in 10 s)).

    python evaluation/sample_time.py [--rounds 40] [--write evaluation/RESULTS.md]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.manager import WorkerProcess  # noqa: E402
from runner.revisions import Revision  # noqa: E402

BENCH = '''
import functools

def spin(n):
    t = 0
    for i in range(n):
        t += i * i % 7
    return t

def bench_py(device):
    return functools.partial(spin, 2000)

def bench_torch(device):
    import torch
    x = torch.randn(256, 512)
    return lambda: torch.softmax(x, -1)
'''

CANDIDATES = [0.002, 0.005, 0.01, 0.02, 0.05]


def measure(folder: Path, func: str, min_sample_time: float, rounds: int) -> dict:
    workers = {}
    for side in ("base", "head"):
        rev = Revision(side=side, ref=side, sha=side, path=folder, python=sys.executable, sys_path=[str(folder)])
        workers[side] = WorkerProcess(rev, "cpu", folder / f"{side}.log", 120)
        resp = workers[side].request("setup", dir=str(folder), file="bench_s.py", func=func, params={},
                                     min_sample_time=min_sample_time, cold_cache=False)
        assert resp["ok"], resp
    samples = {"base": [], "head": []}
    t0 = time.monotonic()
    for r in range(rounds):
        for side in (("base", "head") if r % 2 == 0 else ("head", "base")):
            samples[side] += workers[side].request("sample", count=1)["samples"]
    elapsed = time.monotonic() - t0
    for w in workers.values():
        w.stop()
    d = [math.log(h / b) for b, h in zip(samples["base"], samples["head"])]
    sd = statistics.stdev(d)
    per_second = rounds / elapsed
    return {"sd": sd, "rounds_per_s": per_second, "se_10s": sd / math.sqrt(per_second * 10)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--write", default="", help="append the table to this markdown file")
    args = ap.parse_args()
    lines = ["## Sample duration (`min_sample_time`)", "",
             f"`python evaluation/sample_time.py --rounds {args.rounds}`: one worker pair on identical code, "
             "sd of ln(head/base) per round, rounds per second, and the standard error reachable in 10 s.", "",
             "| benchmark | min_sample_time | sd per round | rounds/s | se in 10 s |", "|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "bench_s.py").write_text(BENCH)
        for func in ("bench_py", "bench_torch"):
            for mst in CANDIDATES:
                m = measure(folder, func, mst, args.rounds)
                line = (f"| {func} | {mst * 1e3:g} ms | {m['sd']:.2%} | {m['rounds_per_s']:.1f} | "
                        f"{m['se_10s']:.2%} |")
                print(line, flush=True)
                lines.append(line)
    text = "\n".join(lines) + "\n"
    if args.write:
        with open(args.write, "a") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
