"""Does a benchmark's verdict depend on what ran before it? The real case, repeated.

A benchmark, not a test: it prints a table and one summary line. Modelled on a real public PR (a
small GPT model whose PR changed only the inference branch; the loss branch was byte-identical,
yet perfgate called it 11 % faster, or inconclusive with a ±100 % interval):

* ``bench_a_inference``: on base, the model's head projection is computed for all 128 positions
  (a 128 × 50,257 float32 temporary, 25.7 MB) and the last row kept; on head only the last row is
  computed. A true improvement.
* ``bench_b_loss``: identical on both sides: the full 25.7 MB logits, then cross-entropy. It runs
  after A in the same compare, so with workers that carry state from one benchmark to the next it
  enters base's and head's processes in different allocator states.

Each compare must call A an ``improvement`` and B ``unchanged`` (never a change). The goal of the
issue is B unchanged in 10 of 10 compares.

Usage::

    python evaluation/isolation.py                     # 10 compares with this checkout
    python evaluation/isolation.py --compares 3 --perfgate ../perfgate-old   # another checkout
    python evaluation/isolation.py --smoke             # one short compare: the script still runs (CI)

``--perfgate DIR`` runs the ``runner`` package of another perfgate checkout (e.g. a ``git worktree``
of an older commit), to show the fault before the fix on the same machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness import ROOT, compare  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import make_repo  # noqa: E402

MODEL = '''import torch

torch.manual_seed(0)
X = torch.randn(128, 256)
W = torch.randn(256, 50257) * 0.02
TARGETS = torch.randint(0, 50257, (128,))


def logits_last(full: bool):
    """The next-token logits of the last position."""
    if full:
        return (X @ W)[-1:]      # all 128 rows (25.7 MB), then keep one
    return X[-1:] @ W            # only the last row


def loss():
    logits = X @ W                # 128 x 50257 float32 = 25.7 MB
    return torch.nn.functional.cross_entropy(logits, TARGETS)
'''

BENCH = '''import model


def bench_a_inference(device):
    return lambda: model.logits_last(model.FULL)


def bench_b_loss(device):
    return model.loss
'''


def run_compare(perfgate_root: Path, repo: Path, out: Path, extra: list[str]) -> tuple[dict, float]:
    """The compare with the runner of the checkout ``perfgate_root``: its results, its seconds."""
    outcome = compare(repo, out, "--no-profile", *extra, checkout=perfgate_root)
    if outcome.code != 0:
        raise SystemExit(f"compare exited {outcome.code}: {outcome.stderr.strip()[-600:]}")
    return outcome.doc, outcome.wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compares", type=int, default=10)
    ap.add_argument("--perfgate", default=str(ROOT), help="perfgate checkout whose runner to use (default: this one)")
    ap.add_argument("extra", nargs="*", help="extra flags for perfgate compare (after --)")
    ap.add_argument("--smoke", action="store_true", help="one compare of 8 s at most (CI)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.compares, args.extra = 1, [*args.extra, "--max-time", "8"]
    root = Path(args.perfgate).resolve()
    rows = []
    with tempfile.TemporaryDirectory(prefix="perfgate-isolation-") as t:
        # base computes full logits in the inference branch; head only the last row
        base = {"benchmarks/bench_model.py": BENCH, "model.py": MODEL + "\nFULL = True\n"}
        repo = make_repo(Path(t) / "repo", base, {"model.py": MODEL + "\nFULL = False\n"})
        for i in range(args.compares):
            doc, wall = run_compare(root, repo, Path(t) / f"out{i}", args.extra)
            by_name = {b["name"]: b["change"] for b in doc["benchmarks"]}
            a, b = by_name["bench_a_inference"], by_name["bench_b_loss"]
            rows.append((a, b, wall))
            print(f"compare {i + 1}/{args.compares}: A {a['verdict']} {_pct(a)}; B {b['verdict']} {_pct(b)} "
                  f"(between-process sd {_sd(b)}, {b.get('process_pairs')} pairs); {wall:.0f} s", flush=True)
    b_unchanged = sum(b["verdict"] == "unchanged" for _, b, _ in rows)
    b_changed = sum(b["verdict"] in ("regression", "improvement") for _, b, _ in rows)
    a_improved = sum(a["verdict"] == "improvement" for a, _, _ in rows)
    print(f"perfgate={root} B_unchanged={b_unchanged}/{len(rows)} B_false_changes={b_changed} "
          f"A_improvement={a_improved}/{len(rows)} median_wall_s={sorted(w for *_, w in rows)[len(rows) // 2]:.0f}")
    return 0


def _pct(change: dict) -> str:
    if change.get("ratio") is None:
        return "–"
    return (f"{(change['ratio'] - 1) * 100:+.1f} % [{(change['ci_low'] - 1) * 100:+.1f}, "
            f"{(change['ci_high'] - 1) * 100:+.1f}]")


def _sd(change: dict) -> str:
    sd = change.get("between_process_sd")
    return "–" if sd is None else f"{sd * 100:.1f} %"


if __name__ == "__main__":
    sys.exit(main())
