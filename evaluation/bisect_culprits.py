"""Measure ``perfgate bisect``: does it name the commit that brought a regression, and with how many
compares? Prints Markdown (the figures quoted in evaluation/RESULTS_bisect.md).

1. **Generated histories** (``--histories``, default 40): a real git repository of 32–64
   first-parent commits per history whose one regressing commit sits at a random position and
   slows the benchmark by a random step between 1 % and 50 % (log-uniform); every compare runs the
   engine's real timing pass and statistics (sequential looks, process pairs, budget, verdicts)
   over simulated workers with the noise of a shared machine (log-normal per process 0.5 % and
   per sample 1 %; ``testkit/sim_bisect.py``). Reported: the share of histories whose
   culprit is named (found, and the right commit), its 95 % Clopper–Pearson interval, and the
   compares per history against the bound ``⌈log2 n⌉ + 2``. Seeds are fixed: reproducible.
2. **A real history** (``--real GIT_DIR``): pyparsing, whose commit 1306517 ("redo _flatten to
   remove recursion", 2024-09-22) made ``transform_string`` quadratic in its output's length;
   commit 7fbbcbd ("Revert transform_string perf penalty in _flatten (introduced in 3.2.0b2)",
   2025-12-22) names and reverts it. The range is 33 first-parent commits, from f683a3d ("Bump
   version to beta 2") to 5686333 (3.2.0rc1, before the revert); the benchmark (written by this
   script into a folder of its own, ``--benchmarks``) upper-cases 30,000 words with
   ``transform_string``, and each side imports pyparsing from its own worktree. ``GIT_DIR`` is a
   clone of https://github.com/pyparsing/pyparsing (e.g. the ``fetch`` tool's snapshot): this
   script copies it into a temporary folder and commits nothing of it. Real compares on this
   machine's CPU: minutes.

Usage: ``python evaluation/bisect_culprits.py [--histories 40] [--real GIT_DIR] [--max-time 120]``;
``--smoke`` runs two small generated histories (seconds; CI runs it so the script cannot go stale).
"""

from __future__ import annotations

import sys
from pathlib import Path

# (Not named bisect.py: Python puts a script's folder first on the import path, and a bisect.py
# there would stand in for the standard library's module in every script of this folder.)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from runner.pipeline.bisect.bisect_run import BisectRequest, bisect  # noqa: E402
from testkit.sim_bisect import SimComparer, make_history  # noqa: E402


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class Outcome:
    commits: int
    step: float
    position: int
    status: str
    right: bool
    among: bool  # the culprit is among the suspects named (found, or "one of these")
    suspects: int
    compares: int
    bound: int
    seconds: float


def generated(count: int, seed: int, min_commits: int, max_commits: int) -> list[Outcome]:
    """``count`` generated histories, each bisected; one :class:`Outcome` each."""
    rng = random.Random(seed)
    out = []
    with tempfile.TemporaryDirectory(prefix="perfgate-bisect-eval-") as tmp:
        for k in range(count):
            n = rng.randint(min_commits, max_commits)
            step = math.exp(rng.uniform(math.log(0.01), math.log(0.5)))
            position = rng.randint(1, n)              # index in the history; 0 is good
            costs = [1e-3] * position + [1e-3 * (1 + step)] * (n + 1 - position)
            history = make_history(Path(tmp) / f"h{k}" / "repo", costs)
            t0 = time.monotonic()
            doc = bisect(BisectRequest(repo=str(history.path), good=history.shas[0], bad=history.shas[-1],
                                       out=Path(tmp) / f"h{k}" / "out"), comparer=SimComparer(history.path, seed=k))
            section = doc["bisect"]
            culprit = section.get("culprit") or {}
            suspects = [c.get("sha") for c in section.get("suspects") or []]
            out.append(Outcome(n, step, position, section["status"], culprit.get("sha") == history.shas[position],
                               history.shas[position] in suspects, len(suspects), section["budget"]["compares"], math.ceil(math.log2(n)) + 2, time.monotonic() - t0))
    return out


def report_generated(outcomes: list[Outcome]) -> list[str]:
    right = sum(o.right for o in outcomes)
    lo, hi = clopper_pearson(right, len(outcomes))
    compares = [o.compares for o in outcomes]
    within = sum(o.compares <= o.bound for o in outcomes)
    among = sum(o.among for o in outcomes)
    lines = ["## Generated histories", "",
             f"{len(outcomes)} histories of {min(o.commits for o in outcomes)}–{max(o.commits for o in outcomes)} "
             "commits, one step of 1–50 % at a random position, noise per process 0.5 % and per sample 1 %.", "",
             "| | value |", "|---|---:|",
             f"| right culprit named | {right} of {len(outcomes)} ({100 * right / len(outcomes):.1f} %, "
             f"95 % CI {100 * lo:.1f}–{100 * hi:.1f} %) |",
             f"| culprit among the commits named (found, or \"one of these\") | {among} of {len(outcomes)} |",
             f"| compares per history, mean (max) | {sum(compares) / len(compares):.2f} ({max(compares)}) |",
             f"| histories within ⌈log2 n⌉ + 2 compares | {within} of {len(outcomes)} |",
             f"| wall seconds per history (simulated compares) | {sum(o.seconds for o in outcomes) / len(outcomes):.1f} |",
             "", "| commits | step | position | status | right | suspects | compares | bound |",
             "|---:|---:|---:|---|---|---:|---:|---:|"]
    lines += [f"| {o.commits} | {100 * o.step:.1f} % | {o.position} | {o.status} | {'yes' if o.right else 'NO'} | "
              f"{o.suspects}{' (culprit among them)' if o.among and not o.right else ''} | {o.compares} | {o.bound} |" for o in outcomes]
    return lines


#: The real history: pyparsing's transform_string regression (see the module docstring).
PYPARSING = {"good": "f683a3d208de47b7f97bf0d3fc17313e27e2a0e6", "bad": "5686333a00ffd630cc1ed3f5abc68c313d8de453",
             "culprit": "13065174b69ff9b412795b1bc043d0acedfdf6d6", "fix": "7fbbcbd91b9124e80d974a53e0d3d8a307a1dc26"}

PYPARSING_BENCH = '''\
"""transform_string over 30,000 words (pyparsing issue: _flatten made it quadratic in 3.2.0b2)."""
import pyparsing as pp


def bench_transform_string(device):
    word = pp.Word(pp.alphas)
    word.set_parse_action(lambda t: t[0].upper())
    text = " ".join(["alpha", "12", "beta,"] * 10000)
    return lambda: word.transform_string(text)
'''


def real_pyparsing(git_dir: Path, max_time: float) -> list[str]:
    """Bisect the pyparsing range with real compares on this machine; the Markdown lines."""
    with tempfile.TemporaryDirectory(prefix="perfgate-bisect-real-") as tmp:
        repo, benches, out = Path(tmp) / "pyparsing", Path(tmp) / "benchmarks", Path(tmp) / "out"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(git_dir), str(repo)], check=True)
        benches.mkdir()
        (benches / "bench_pyparsing.py").write_text(PYPARSING_BENCH)
        from runner.cli.main import main

        t0 = time.monotonic()
        code = main(["bisect", "--repo", str(repo), "--good", PYPARSING["good"], "--bad", PYPARSING["bad"],
                     "--benchmarks", str(benches), "--max-time", str(max_time), "--out", str(out), "--quiet"])
        wall = time.monotonic() - t0
        if code != 0:
            return ["## Real history: pyparsing", "", f"perfgate bisect exited {code}"]
        import json

        section = json.loads((out / "results.json").read_text())["bisect"]
    culprit = section.get("culprit") or {}
    named = culprit.get("sha") == PYPARSING["culprit"]
    lines = ["## Real history: pyparsing `transform_string` (known culprit 1306517, reverted by 7fbbcbd)", "",
             f"Range {PYPARSING['good'][:12]}..{PYPARSING['bad'][:12]}: {section['commits']} first-parent commits; "
             f"status **{section['status']}**; named {str(culprit.get('sha'))[:12]} "
             f"({'the known culprit' if named else 'NOT the known culprit'}): "
             f"{100 * ((culprit.get('ratio') or 1) - 1):+.1f} % against good, "
             f"{100 * ((culprit.get('step_ratio') or 1) - 1):+.1f} % on its own.", "",
             f"{section['budget']['compares']} compares (bound ⌈log2 n⌉ + 2 = "
             f"{math.ceil(math.log2(section['commits'])) + 2}), {section['budget']['spent_s']:.0f} s of compares, "
             f"{wall:.0f} s in all, --max-time {max_time:g} per compare.", "",
             "| commit | subject | change | interval | outcome |", "|---|---|---:|---:|---|"]
    for c in section["compares"]:
        change = "" if c.get("ratio") is None else f"{100 * (c['ratio'] - 1):+.1f} %"
        interval = "" if c.get("ci_low") is None else f"[{100 * (c['ci_low'] - 1):+.1f}, {100 * (c['ci_high'] - 1):+.1f}]"
        lines.append(f"| {c['sha'][:12]} | {c['subject'][:70]} | {change} | {interval} | {c['outcome']} |")
    lines += [f"- {n}" for n in section.get("notes") or []]
    lines.append(f"\nreal_history_named={'yes' if named else 'no'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=40)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--real", type=Path, metavar="GIT_DIR", help="a clone of pyparsing/pyparsing")
    parser.add_argument("--max-time", type=float, default=120.0, help="seconds per real compare")
    parser.add_argument("--smoke", action="store_true", help="two small generated histories (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        outcomes = generated(2, args.seed, 8, 12)
    else:
        outcomes = generated(args.histories, args.seed, 32, 64)
    lines = report_generated(outcomes) if outcomes else []
    if args.real:
        lines += [""] + real_pyparsing(args.real, args.max_time)
    if outcomes:
        right = sum(o.right for o in outcomes)
        lines += ["", f"histories={len(outcomes)} right={right} among={sum(o.among for o in outcomes)} "
                      f"mean_compares={sum(o.compares for o in outcomes) / len(outcomes):.2f} "
                      f"within_bound={sum(o.compares <= o.bound for o in outcomes)}"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
