"""Where a change stops paying, measured on a Triton ``perf_report`` grid of CPU callables.

Two compares of one generated repository (``kernels.py``: loops whose time is their count;
``benchmarks/bench_grid.py``: a grid of N × provider cases, as sglang writes them, run by the
``triton`` convention with the stand-in ``triton.testing``):

- **A/A**: the head changes a comment only. Every verdict other than ``unchanged`` or
  ``inconclusive`` is false; the figure is how many of the grid's cases got one.
- **crossover**: the head changes the ``lib`` provider's cost from ``n`` to ``n/4 + n²/8192`` loop
  steps — faster below N = 6144, slower above — and leaves the other providers alone. The figures:
  the ``lib`` verdicts per N, whether both directions were found and the crossover bracketed between
  the measured N on either side of 6144, the sweep line the comment shows, and false verdicts among
  the untouched providers.

Usage::

    python evaluation/sweeps.py [--max-time 900]     # 10 N × 5 providers = 50 cases each
    python evaluation/sweeps.py --smoke              # 2 N × 1 provider, seconds (CI)
    python evaluation/sweeps.py --only cross --max-time 500 --keep /tmp/sweeps   # one compare, its results kept

The budget matters: the Benjamini–Hochberg correction over the 50 cases asks more process pairs of a
change than its own look does, so a budget too small for the grid (200 s on a loaded 2-core machine)
leaves even a 4× change ``inconclusive`` (never a false verdict); see evaluation/RESULTS_conventions.md.

The last line: ``aa_cases=.. aa_false=.. aa_unchanged=.. aa_inconclusive=.. cross_faster=..
cross_slower=.. cross_bracketed=.. cross_false=..``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness import ROOT, SPIN, compare  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import make_repo  # noqa: E402

KERNELS = '''
"""Loops whose time is their count: ``lib`` costs COST(n) steps, the other providers n."""


def COST(n):
    return n


''' + SPIN + '''

def lib(n):
    return spin(COST(n))


def reference(n):
    return spin(n)
'''

GRID = '''
import triton
import triton.testing

import kernels

PROVIDERS = {providers}


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["N"], x_vals={sizes}, line_arg="provider", line_vals=PROVIDERS, line_names=PROVIDERS,
    plot_name="grid", args={{}}))
def bench(N, provider):
    work = kernels.lib if provider == "lib" else kernels.reference
    return triton.testing.do_bench(lambda: work(N), quantiles=[0.5, 0.2, 0.8])


if __name__ == "__main__":
    bench.run(print_data=True)
'''

#: Where the head's lib cost n/4 + n²/8192 equals the base's n.
CROSSOVER = 6144


def grid_repo(root: Path, sizes: list[int], providers: list[str], head_kernels: str) -> Path:
    """Base: the grid over ``sizes`` × ``providers``; head: ``kernels.py`` replaced by ``head_kernels``."""
    grid = GRID.format(providers=providers, sizes=sizes)
    base = {"kernels.py": KERNELS, "benchmarks/bench_grid.py": grid,
            "perfgate.toml": 'suite = "triton"\nprofile = false\n'}
    return make_repo(root, base, {"kernels.py": head_kernels})


def compare_grid(repo: Path, out: Path, max_time: float) -> tuple[dict, float]:
    """``perfgate compare base head``: its results.json and the seconds it took."""
    outcome = compare(repo, out, "--max-time", str(max_time))
    if outcome.doc is None:
        raise SystemExit(f"compare failed:\n{outcome.stderr[-3000:]}")
    return outcome.doc, outcome.wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-time", type=float, default=900.0, help="seconds per compare")
    parser.add_argument("--smoke", action="store_true", help="2 sizes × 1 provider, a short budget (CI)")
    parser.add_argument("--only", choices=("aa", "cross"), help="run one of the two compares")
    parser.add_argument("--keep", type=Path, help="a folder to keep the compares' repositories and results in")
    args = parser.parse_args(argv)
    if args.smoke:
        sizes, providers, max_time = [1024, 16384], ["lib"], 12.0
    else:
        sizes = [256, 512, 1024, 2048, 4096, 8192, 16384, 24576, 32768, 49152]
        providers, max_time = ["lib", "ref1", "ref2", "ref3", "ref4"], args.max_time
    figures = {}
    with tempfile.TemporaryDirectory(prefix="perfgate-sweeps-") as tmp:
        tmp = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            tmp = args.keep
        if args.only != "cross":
            figures.update(_aa(tmp, sizes, providers, max_time))
        if args.only != "aa":
            figures.update(_crossover(tmp, sizes, providers, max_time))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


def _aa(tmp: Path, sizes: list[int], providers: list[str], max_time: float) -> dict:
    """The A/A compare: prints its verdicts, returns its figures."""
    head = KERNELS + "\n# a comment: nothing else changes\n"
    aa_repo = grid_repo(tmp / "aa", sizes, providers, head)
    doc, seconds = compare_grid(aa_repo, tmp / "aa-out", max_time)
    verdicts = [b["change"]["verdict"] for b in doc["benchmarks"]]
    false = [b["name"] for b in doc["benchmarks"] if b["change"]["verdict"] in ("regression", "improvement")]
    print(f"A/A: {len(verdicts)} cases in {seconds:.0f} s: " + ", ".join(
        f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts))) + (f"; false: {false}" if false else ""))
    return dict(aa_cases=len(verdicts), aa_false=len(false), aa_unchanged=verdicts.count("unchanged"),
                aa_inconclusive=verdicts.count("inconclusive"))


def _crossover(tmp: Path, sizes: list[int], providers: list[str], max_time: float) -> dict:
    """The crossover compare: prints the lib verdicts and the sweep line, returns its figures."""
    head = KERNELS.replace("def COST(n):\n    return n\n", "def COST(n):\n    return n // 4 + n * n // 8192\n")
    cross_repo = grid_repo(tmp / "cross", sizes, providers, head)
    doc, seconds = compare_grid(cross_repo, tmp / "cross-out", max_time)
    lib = sorted((b for b in doc["benchmarks"] if b["params"]["provider"] == "lib"), key=lambda b: int(b["params"]["N"]))
    rows = [(int(b["params"]["N"]), b["change"]["verdict"], b["change"]["ratio"]) for b in lib]
    print(f"crossover: {len(doc['benchmarks'])} cases in {seconds:.0f} s; lib: "
          + ", ".join(f"N={n} {v} {(r - 1) * 100:+.0f} %" if r else f"N={n} {v}" for n, v, r in rows))
    faster = [n for n, v, _ in rows if v == "improvement"]
    slower = [n for n, v, _ in rows if v == "regression"]
    below = max((n for n in sizes if n < CROSSOVER), default=None)
    above = min((n for n in sizes if n > CROSSOVER), default=None)
    line = next((ln for ln in (tmp / "cross-out" / "report.md").read_text().splitlines()
                 if ln.startswith("- `grid (provider=lib)`")), "")
    bracketed = f"crossover between N = {below} and N = {above}" in line
    others = [b["name"] for b in doc["benchmarks"] if b["params"]["provider"] != "lib"
              and b["change"]["verdict"] in ("regression", "improvement")]
    print(f"sweep line: {line[2:] or '(none)'}")
    print(f"false verdicts among the untouched providers: {len(others)} of {len(doc['benchmarks']) - len(lib)}")
    return dict(cross_faster=len(faster), cross_slower=len(slower), cross_bracketed=int(bracketed),
                cross_false=len(others))


if __name__ == "__main__":
    sys.exit(main())
