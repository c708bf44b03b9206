"""Measure perfgate's change-point detection (bot.history.changepoints) on generated series.

Prints, as Markdown (the figures quoted in evaluation/RESULTS_history.md):

1. false-positive rate: the share of noise-only series (no change at all) in which any
   change point is reported, with its 95 % Clopper-Pearson interval: log-normal noise,
   heavy-tailed (Student t, 3 degrees of freedom) noise, and series grown one point at a
   time with the incremental update (a false alarm at *any* length counts);
2. detection rate and position error for single steps of known size and position;
3. the time per series.

Series: ``n`` values ``1 ms * factor(i) * exp(noise)``; seeds are fixed, so the figures are
reproducible. Usage: ``python evaluation/changepoints.py [--series 500] [--quick]``; ``--smoke``
runs every table at a toy size (seconds; CI runs it so the script cannot go stale).
With ``--compare-spa PYTHON`` it also runs MongoDB's signal-processing-algorithms E-Divisive
(installed in another interpreter, it pins numpy < 2) on the same noise-only series.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.history import changepoints as cp  # noqa: E402


def noise_series(count: int, n: int, noise: float, seed: int, heavy: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        eps = rng.standard_t(3, n) * noise / np.sqrt(3) if heavy else rng.normal(0, noise, n)
        out.append(1e-3 * np.exp(eps))
    return out


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def false_positive_rate(series: list[np.ndarray], **options) -> tuple[int, int]:
    return sum(1 for s in series if cp.detect(s, **options)), len(series)


def grown_false_positive_rate(series: list[np.ndarray], start: int = 8) -> tuple[int, int]:
    hits = 0
    for s in series:
        previous: list = []
        ever = False
        for n in range(start, len(s) + 1):
            previous = cp.update(s[:n], previous)
            ever = ever or bool(previous)
        hits += ever
    return hits, len(series)


def detection(count: int, n: int, steps: list[tuple[int, float]], noise: float, seed: int) -> tuple[float, float, float]:
    """(share with every step found within ±1, share with any change point, mean |position error|)."""
    rng = np.random.default_rng(seed)
    near = anything = 0
    errors = []
    for _ in range(count):
        level = np.full(n, 1e-3)
        for at, factor in steps:
            level[at:] *= factor
        found = cp.detect(level * np.exp(rng.normal(0, noise, n)))
        anything += bool(found)
        ok = True
        for at, _ in steps:
            if not found:
                ok = False
                continue
            best = min(found, key=lambda f: abs(f.index - at))
            errors.append(abs(best.index - at))
            ok = ok and abs(best.index - at) <= 1
        near += ok
    return near / count, anything / count, (float(np.mean(errors)) if errors else float("nan"))


_SPA_SCRIPT = r"""
import json, sys
import numpy as np
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive
data = json.load(sys.stdin)
found = [sorted(int(i) for i in e_divisive(np.array(s), pvalue=data["pvalue"], permutations=data["permutations"]))
         for s in data["series"]]
print(json.dumps(found))
"""


def spa_change_points(python: str, series: list[np.ndarray], pvalue: float, permutations: int) -> list[list[int]]:
    """E-Divisive of signal-processing-algorithms, run by another interpreter: indices per series."""
    payload = json.dumps({"series": [list(map(float, s)) for s in series], "pvalue": pvalue,
                          "permutations": permutations})
    done = subprocess.run([python, "-c", _SPA_SCRIPT], input=payload, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def step_series_batch(count: int, n: int, at: int, factor: float, noise: float, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    level = np.full(n, 1e-3)
    level[at:] *= factor
    return [level * np.exp(rng.normal(0, noise, n)) for _ in range(count)]


def _compare_with_spa(python: str, noise_only: list[np.ndarray]) -> None:
    step = step_series_batch(100, 40, 20, 1.05, 0.02, seed=77)
    small = step_series_batch(100, 40, 20, 1.02, 0.01, seed=78)
    print("## Against MongoDB signal-processing-algorithms E-Divisive (the same series)\n")
    print("| detector | noise only: series with a change point | +5 % step, 2 % noise: found ±1 | "
          "+2 % step, 1 % noise: found ±1 |")
    print("|---|---:|---:|---:|")

    def rates(found_noise, found_step, found_small):
        fp = sum(bool(f) for f in found_noise) / len(found_noise)
        hit = sum(any(abs(i - 20) <= 1 for i in f) for f in found_step) / len(found_step)
        hit_small = sum(any(abs(i - 20) <= 1 for i in f) for f in found_small) / len(found_small)
        return f"{fp:.1%} | {hit:.0%} | {hit_small:.0%}"

    for pvalue, perms, label in ((0.05, 100, "e_divisive(pvalue=0.05, permutations=100), its defaults"),
                                 (cp.DEFAULT_ALPHA, 999, f"e_divisive(pvalue={cp.DEFAULT_ALPHA}, permutations=999)")):
        found = [spa_change_points(python, batch, pvalue, perms) for batch in (noise_only, step, small)]
        print(f"| {label} | {rates(*found)} |")
    ours = [[s.index for s in cp.detect(x)] for x in noise_only], [[s.index for s in cp.detect(x)] for x in step], \
        [[s.index for s in cp.detect(x)] for x in small]
    print(f"| perfgate, defaults | {rates(*ours)} |")
    print(f"\nNoise-only: {len(noise_only)} series × {len(noise_only[0])} points, log-normal 2 % sd; steps: "
          "100 series × 40 points, step at 20.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=500, help="noise-only series per setting (default 500)")
    parser.add_argument("--length", type=int, default=50, help="points per series (default 50)")
    parser.add_argument("--quick", action="store_true", help="fewer series for the detection table")
    parser.add_argument("--compare-spa", metavar="PYTHON", help="an interpreter with signal-processing-algorithms")
    parser.add_argument("--smoke", action="store_true", help="every table at a toy size (seconds; for CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.series, args.length = 8, 30

    print("# Change points: measured by evaluation/changepoints.py\n")
    print(f"Settings: alpha = {cp.DEFAULT_ALPHA} per round (Holm), {cp.DEFAULT_PERMUTATIONS} permutations, "
          f"min_size = {cp.DEFAULT_MIN_SIZE}, min_change = {cp.DEFAULT_MIN_CHANGE:.0%}.\n")
    print("## False-positive rate (noise only, no change)\n")
    print("| noise | series × points | series with a change point | rate | 95 % CI |")
    print("|---|---|---:|---:|---|")
    t = time.perf_counter()
    rows = [
        ("log-normal, 2 % sd", noise_series(args.series, args.length, 0.02, 1), {}),
        ("log-normal, 0.5 % sd", noise_series(args.series, args.length, 0.005, 2), {}),
        ("Student t3 (heavy tail), 2 % sd", noise_series(args.series, args.length, 0.02, 3, heavy=True), {}),
        ("log-normal, 2 % sd, min_change = 0 (the significance test alone)",
         noise_series(args.series, args.length, 0.02, 5), {"min_change": 0.0}),
    ]
    timed = 0
    for label, series, options in rows:
        k, n = false_positive_rate(series, **options)
        timed += n
        lo, hi = clopper_pearson(k, n)
        print(f"| {label} | {n} × {args.length} | {k} | {k / n:.2%} | {lo:.2%} – {hi:.2%} |")
    per_series = (time.perf_counter() - t) / timed
    grown = noise_series(max(args.series // 5, 20), args.length, 0.02, 4)
    k, n = grown_false_positive_rate(grown)
    lo, hi = clopper_pearson(k, n)
    print(f"| log-normal 2 %, grown point by point from 8 to {args.length} (incremental update; "
          f"any alarm on the way counts) | {n} × {args.length} | {k} | {k / n:.2%} | {lo:.2%} – {hi:.2%} |")
    print(f"\nTime: {per_series * 1000:.1f} ms per {args.length}-point series (full detection, one core).\n")

    if args.compare_spa:
        _compare_with_spa(args.compare_spa, rows[0][1][:min(args.series, 200)])

    print("## Detection of known steps (found within ±1 point of where they are)\n")
    print("| points | steps (index: change) | noise sd | all found within ±1 | any change point | mean position error |")
    print("|---:|---|---:|---:|---:|---:|")
    count = 3 if args.smoke else 50 if args.quick else 200
    cases = [(40, [(20, 1.02)], 0.01), (40, [(20, 1.05)], 0.01), (40, [(20, 1.10)], 0.01),
             (40, [(20, 1.05)], 0.02), (40, [(20, 1.10)], 0.02), (20, [(10, 1.05)], 0.01),
             (16, [(8, 1.10)], 0.01), (12, [(6, 1.10)], 0.01), (40, [(35, 1.05)], 0.01),
             (40, [(37, 1.10)], 0.01), (40, [(15, 1.10), (25, 1 / 1.10)], 0.01),
             (60, [(20, 1.05), (40, 1.05)], 0.01)]
    for seed, (n, steps, noise) in enumerate(cases):
        near, anything, err = detection(count, n, steps, noise, seed=100 + seed)
        label = ", ".join(f"{at}: {factor - 1:+.0%}" for at, factor in steps)
        print(f"| {n} | {label} | {noise:.0%} | {near:.0%} | {anything:.0%} | {err:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
