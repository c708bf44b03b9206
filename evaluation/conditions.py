"""Which conditions to measure under: A/A noise against fidelity to the user's threading.

A benchmark, not a test: it prints a table and one summary line. On a machine with few CPUs
perfgate cannot both leave a CPU to its parent process and keep torch's default thread count
(`cpus = "auto"` then runs both sides reduced, 1 CPU and 1 thread on 2 CPUs), while
`cpus = "all"` keeps the default threads and lets the parent share the CPUs. Both are true
measurements of different worlds; this script measures what each costs:

* fidelity — a real-report case: a PR that adds ``.contiguous()`` before a convolution of a
  channels-last input. The change's size depends on the threads (issue "Measure under the
  conditions users run": 1.1x with one thread on one CPU, 2.6-3x with torch's default two).
* noise — A/A compares of a few torch benchmarks (identical code on both sides): false verdicts,
  how many end `unchanged`, and the spread of the process pairs' estimates.

Usage::

    python evaluation/conditions.py [--aa 3]
    python evaluation/conditions.py --smoke     # one A/A compare per configuration, 5 s each (CI)

Each configuration runs the real ``perfgate compare`` (profiling off) with ``--config`` files
that set ``cpus``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

from harness import ROOT, compare  # the evaluation folder is first on sys.path

sys.path.insert(0, str(ROOT))

from testkit.gitrepo import make_repo  # noqa: E402

CONV = '''import torch

def bench_conv_channels_last(device):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(64, 64, 3, padding=1)
    x = torch.randn(8, 64, 56, 56).to(memory_format=torch.channels_last)
    return lambda: conv({arg})
'''

AA = '''import torch

def bench_matmul(device):
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    return lambda: a @ b

def bench_softmax(device):
    x = torch.randn(512, 1024)
    return lambda: torch.softmax(x, -1)

def bench_layer_norm(device):
    ln = torch.nn.LayerNorm(1024)
    x = torch.randn(256, 1024)
    return lambda: ln(x)

def bench_gelu(device):
    x = torch.randn(1 << 18)
    return lambda: torch.nn.functional.gelu(x)
'''


#: The generated suite's one file.
BENCH = "benchmarks/bench_t.py"


def compare_under(repo: Path, out: Path, cpus: str, max_time: float | None = None
                  ) -> tuple[dict, float]:
    """The compare in this process with a ``--config`` that sets ``cpus``: results, seconds."""
    config = out.parent / f"{out.name}.toml"
    config.write_text(f'cpus = "{cpus}"\nprofile = false\n' + (f"max_time = {max_time}\n" if max_time else ""))
    outcome = compare(repo, out, "--config", str(config), checkout=None)
    if outcome.code != 0:
        raise SystemExit(f"compare exited {outcome.code}")
    return outcome.doc, outcome.wall


def _x(ratio: float | None) -> str:
    """A ratio with two decimals, or "–" when the compare gave none (no process pair finished)."""
    return "–" if ratio is None else f"{ratio:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aa", type=int, default=3, help="A/A compares per configuration (4 benchmarks each)")
    ap.add_argument("--smoke", action="store_true", help="one A/A compare per configuration, 5 s each (CI)")
    args = ap.parse_args(argv)
    max_time = None
    if args.smoke:
        args.aa, max_time = 1, 5.0
    rows = []
    with tempfile.TemporaryDirectory(prefix="perfgate-conditions-") as t:
        tmp = Path(t)
        conv = make_repo(tmp / "conv", {BENCH: CONV.format(arg="x")},
                         {BENCH: CONV.format(arg="x.contiguous()"), "README.md": "head\n"})
        aa = make_repo(tmp / "aa", {BENCH: AA}, {"README.md": "head\n"})
        for cpus in ("auto", "all"):
            doc, wall = compare_under(conv, tmp / f"conv-{cpus}", cpus, max_time)
            change = doc["benchmarks"][0]["change"]
            worker = doc["environment"]["worker"]
            verdicts, pair_sds, walls = [], [], [wall]
            for i in range(args.aa):
                aa_doc, aa_wall = compare_under(aa, tmp / f"aa-{cpus}-{i}", cpus, max_time)
                walls.append(aa_wall)
                for b in aa_doc["benchmarks"]:
                    verdicts.append(b["change"]["verdict"])
                    logs = [math.log(p["ratio"]) for p in b["change"].get("pairs") or [] if p.get("ratio")]
                    if len(logs) >= 2:
                        pair_sds.append(statistics.stdev(logs))
            row = {"cpus": cpus, "note": worker.get("note"), "threads": worker.get("sides", {}).get("head", {}).get("torch_threads"),
                   "conv_ratio": change["ratio"], "conv_ci": (change["ci_low"], change["ci_high"]),
                   "conv_verdict": change["verdict"], "aa_n": len(verdicts),
                   "aa_false": sum(v in ("regression", "improvement") for v in verdicts),
                   "aa_unchanged": verdicts.count("unchanged"),
                   "pair_sd_median": statistics.median(pair_sds) if pair_sds else None,
                   "wall_median": statistics.median(walls)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| cpus | conditions | `.contiguous()` before a conv (head/base) | A/A false verdicts | A/A unchanged | "
          "sd of pairs' estimates (median) |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['cpus']} | {r['note']} | {_x(r['conv_ratio'])}x [{_x(r['conv_ci'][0])}, {_x(r['conv_ci'][1])}] "
              f"({r['conv_verdict']}) | {r['aa_false']}/{r['aa_n']} | {r['aa_unchanged']}/{r['aa_n']} | "
              f"{(r['pair_sd_median'] or 0) * 100:.2f} % |")
    auto, full = rows
    print(f"conv_ratio_auto={_x(auto['conv_ratio'])} conv_ratio_all={_x(full['conv_ratio'])} "
          f"aa_false_auto={auto['aa_false']} aa_false_all={full['aa_false']} "
          f"pair_sd_auto={(auto['pair_sd_median'] or 0):.4f} pair_sd_all={(full['pair_sd_median'] or 0):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
