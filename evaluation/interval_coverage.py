"""Coverage of perfgate's interval over process pairs, by simulation, against the method it replaced.

A benchmark, not a test: it prints a Markdown table (and writes it to evaluation/RESULTS.md's
coverage section when ``--write`` is given). Each simulated benchmark has ``J`` process pairs of
``R`` rounds; the log-ratio of round ``i`` in pair ``j`` is

    d_ij = b_j + e_ij,   b_j ~ N(0, tau^2) (between-pair spread),   e_ij ~ sigma * t_3 / sqrt(3)

(heavy-tailed round noise with standard deviation ``sigma``), and optionally one pair is an outlier
(``b_1 += delta``). The true change is 0, so an interval "covers" when it contains a ratio of 1.
The outlier of -0.575 is the real case that made a false verdict: in the first worker pair head
ran an untouched loss step in 24.5 ms and base in 43.5 ms (ln(24.5/43.5) = -0.574), while the
later pairs agreed.

Methods, at the nominal level (default 99 %, what perfgate reports with 5 looks at alpha 0.05):

* ``t over pairs`` — perfgate now (:func:`runner.stats.blocked_estimate`): per pair the
  Hodges–Lehmann log-ratio, then the mean of the pairs with a Student t interval on J − 1 df,
  standard deviation floored at ``process_noise`` (0.3 %).
* ``DerSimonian–Laird`` — perfgate before: the same per-pair estimates with standard errors from
  their Wilcoxon intervals, a DerSimonian–Laird random-effects mean, tau floored at 1 %, normal
  quantile (DerSimonian & Laird, Controlled Clinical Trials 7, 1986).
* ``pooled rounds`` — all rounds as one paired sample, ignoring the pairs (Wilcoxon/HL interval):
  what a tool that restarts nothing would report.

Usage::

    python evaluation/interval_coverage.py                  # 4000 simulated benchmarks per setting
    python evaluation/interval_coverage.py --reps 1000      # quicker
    python evaluation/interval_coverage.py --smoke          # every cell at a toy size (CI)
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner import stats  # noqa: E402

R = 8  # rounds per process pair (perfgate's default pair_rounds)


def _walsh_indices(n: int):
    return np.triu_indices(n)


def hl_and_se(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`runner.stats.block_summary` over the last axis: HL center and the
    standard error read off the 95 % Wilcoxon interval. ``d``: (..., n) log-ratios."""
    n = d.shape[-1]
    i, j = _walsh_indices(n)
    walsh = np.sort((d[..., i] + d[..., j]) / 2.0, axis=-1)
    m = walsh.shape[-1]
    center = np.median(walsh, axis=-1)
    z = 1.959963984540054
    k = max(0, int(math.floor(n * (n + 1) / 4.0 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0) - 0.5)))
    se = (walsh[..., m - 1 - k] - walsh[..., k]) / (2 * 1.959964)
    return center, np.maximum(se, 1e-6)


def t_over_pairs(centers: np.ndarray, level: float, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`runner.stats.blocked_estimate` (J >= 2): ``(low, high)`` in log units."""
    j = centers.shape[-1]
    mean = centers.mean(axis=-1)
    sd = np.maximum(centers.std(axis=-1, ddof=1), floor)
    half = sps.t.ppf(0.5 + level / 2, j - 1) * sd / math.sqrt(j)
    return mean - half, mean + half


def dersimonian_laird(centers: np.ndarray, se: np.ndarray, level: float, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """perfgate's previous interval (runner/stats.py at b3ffcba), vectorised."""
    w = 1.0 / se ** 2
    fixed = (w * centers).sum(-1) / w.sum(-1)
    q = (w * (centers - fixed[..., None]) ** 2).sum(-1)
    c = w.sum(-1) - (w ** 2).sum(-1) / w.sum(-1)
    k = centers.shape[-1]
    tau2 = np.where(c > 0, np.maximum(0.0, (q - (k - 1)) / np.where(c > 0, c, 1.0)), 0.0)
    tau2 = np.maximum(tau2, floor ** 2)
    ws = 1.0 / (se ** 2 + tau2[..., None])
    mean = (ws * centers).sum(-1) / ws.sum(-1)
    half = sps.norm.ppf(0.5 + level / 2) * np.sqrt(1.0 / ws.sum(-1))
    return mean - half, mean + half


def pooled(d: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """All rounds as one paired sample: the Wilcoxon interval of the HL estimate (level ``level``)."""
    flat = d.reshape(d.shape[0], -1)
    n = flat.shape[-1]
    i, j = _walsh_indices(n)
    walsh = np.sort((flat[:, i] + flat[:, j]) / 2.0, axis=-1)
    m = walsh.shape[-1]
    z = sps.norm.ppf(0.5 + level / 2)
    k = max(0, int(math.floor(n * (n + 1) / 4.0 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0) - 0.5)))
    return walsh[:, k], walsh[:, m - 1 - k]


def simulate(rng, reps: int, pairs: int, tau: float, sigma: float, outlier: float) -> np.ndarray:
    """Log-ratios, shape (reps, pairs, R), true change 0."""
    b = rng.normal(0.0, tau, size=(reps, pairs, 1)) if tau else np.zeros((reps, pairs, 1))
    b[:, 0, 0] += outlier
    e = rng.standard_t(3, size=(reps, pairs, R)) * sigma / math.sqrt(3.0)
    return b + e


def check_against_runner(rng) -> None:
    """The vectorised estimators must equal runner.stats on a few samples."""
    d = simulate(rng, 3, 4, 0.01, 0.05, 0.0)
    for r in range(3):
        blocks = [stats.block_summary(np.exp(np.zeros(R)).tolist(), np.exp(d[r, j]).tolist()) for j in range(4)]
        est = stats.blocked_estimate(blocks, 0.99, 0.003)
        centers, _ = hl_and_se(d[r:r + 1])
        low, high = t_over_pairs(centers, 0.99, 0.003)
        assert abs(math.log(est.ci_low) - low[0]) < 1e-9 and abs(math.log(est.ci_high) - high[0]) < 1e-9, (est, low, high)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--level", type=float, default=0.99)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--smoke", action="store_true", help="50 simulated benchmarks per cell (seconds; for CI)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.reps = 50
    rng = np.random.default_rng(args.seed)
    check_against_runner(rng)
    settings = [(tau, sigma, outlier) for outlier in (0.0, -0.574, 0.10) for tau in (0.0, 0.01, 0.03)
                for sigma in (0.02, 0.10)]
    lines = [f"Nominal {args.level:.0%} intervals, {args.reps} simulated benchmarks per cell, true change 0, "
             f"{R} rounds per pair, round noise t3 with sd sigma; `python evaluation/interval_coverage.py --reps {args.reps}`.",
             "", "| outlying pair | between-pair sd | round sd | J | t over pairs (now) | DerSimonian–Laird (before) | "
             "pooled rounds | t half-width (median) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    worst = 1.0
    for tau, sigma, outlier in settings:
        for pairs in (2, 3, 5, 8):
            d = simulate(rng, args.reps, pairs, tau, sigma, outlier)
            centers, se = hl_and_se(d)
            covers = {}
            lo, hi = t_over_pairs(centers, args.level, 0.003)
            covers["t"] = float(np.mean((lo <= 0) & (0 <= hi)))
            half = float(np.median((hi - lo) / 2))
            lo, hi = dersimonian_laird(centers, se, args.level, 0.01)
            covers["dl"] = float(np.mean((lo <= 0) & (0 <= hi)))
            lo, hi = pooled(d, args.level)
            covers["pooled"] = float(np.mean((lo <= 0) & (0 <= hi)))
            worst = min(worst, covers["t"])
            label = "none" if not outlier else f"{outlier:+.3f} (×{math.exp(outlier):.2f})"
            width = (math.exp(half) - 1) * 100
            lines.append(f"| {label} | {tau:.0%} | {sigma:.0%} | {pairs} | {covers['t']:.2%} | {covers['dl']:.2%} | "
                         f"{covers['pooled']:.2%} | {'> ±1000' if width > 1000 else f'±{width:.1f}'} % |")
            print(lines[-1], flush=True)
    lines += ["", f"Lowest coverage of the interval perfgate uses now: {worst:.2%} (goal ≥ 98.5 %)."]
    print("\n".join(lines[:4]))
    print(lines[-1])
    print(f"coverage_min_t={worst:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
