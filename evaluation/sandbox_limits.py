"""The sandbox's limits (issue 51, item 3): a real training step under the default limits timed
as outside the sandbox, and a fork bomb, a 100 GiB write and a hang at small limits, each timed
to its error. A benchmark, not a test: it prints what it saw and writes a Markdown page.

**A/A, the default limits.** A repository of two training-step benchmarks in the convention the
demo uses (``benchmarks/bench_*.py``, ``bench_x(device)`` returning the call to time): a small
MLP and a small conv net, each a forward, a backward and an SGD step on CPU. Base and head hold
the same code (head changes a note only), compared with ``--all`` by the Action's own paths:
``action.sandboxed.compare_in_sandbox`` (bubblewrap, the limits of a workflow that sets none:
:func:`runner.sandbox.limits.default_limits`) and, for the same command line, ``sandbox: none``'s
``action.compare.run_compare`` with its deadline alone. Both must finish (status 0), with the
same verdicts (unchanged or inconclusive, never a change, never a limit's error); the per-call
medians are printed side by side.

**The limits reached** (``--limits``, small values): head's benchmark forks without end (process
limit 256), writes 100 GiB to ``/tmp`` in 1 MiB pieces (scratch 256 MiB), or its file hangs on
import (wall time 30 s). Each is a real ``perfgate compare`` in the real sandbox; the seconds
are from the moment head's code began (it prints a stamp into its worker's log, which comes out
with the results) to the end of the sandboxed step, and for the hang, past the limit.

Usage::

    python evaluation/sandbox_limits.py                  # 2 A/A rounds of 60 s, then the limits
    python evaluation/sandbox_limits.py --write evaluation/RESULTS_sandbox_limits.md
    python evaluation/sandbox_limits.py --smoke          # one round of 12 s and the limits (CI)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from action import compare as compare_mod  # noqa: E402
from action.environment import Plan  # noqa: E402
from action.sandboxed import compare_in_sandbox, with_limit  # noqa: E402
from runner.sandbox import confine, limits  # noqa: E402
from runner.git import git  # noqa: E402
from testkit.gitrepo import make_repo  # noqa: E402

MODEL = '''"""Two small networks and their training step."""

import torch
from torch import nn


def mlp():
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def conv():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(32, 10))


def train_step(net, x, y):
    """The call timed: forward, loss, backward, an optimizer step."""
    torch.manual_seed(0)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    return step
'''

BENCH = '''"""Training steps: plain functions, no import of perfgate (the demo's convention)."""

import torch

import model


def bench_mlp_train_step(device):
    torch.manual_seed(0)
    net = model.mlp().to(device)
    return model.train_step(net, torch.randn(64, 256, device=device),
                            torch.randint(0, 10, (64,), device=device))


def bench_conv_train_step(device):
    torch.manual_seed(0)
    net = model.conv().to(device)
    return model.train_step(net, torch.randn(8, 3, 16, 16, device=device),
                            torch.randint(0, 10, (8,), device=device))
'''

#: head's benchmarks at the limits: the code that starts (``began()`` prints the stamp first).
STAMP = '''import os
import sys
import time


def began():
    print(f"LIMIT-PROBE-BEGAN {time.time():.3f}", file=sys.stderr, flush=True)
'''
PROBES = {
    # forks without end; a fresh interpreter without torch forks fast (a torch process does not)
    "fork bomb": ("call", "import os\nos.fork() == 0 and os.execv(sys.executable, [sys.executable, "
                  "'-S', '-c', 'import os\\nwhile True:\\n    try:\\n        os.fork()\\n"
                  "    except OSError:\\n        pass\\n'])\nos.wait()\n"),
    # 100 GiB to /tmp, 1 MiB at a time
    "100 GiB write": ("call", "with open('/tmp/fill', 'wb') as f:\n"
                      "    for _ in range(100 << 10):\n        f.write(b'x' * (1 << 20))\n"),
    # the benchmark file never finishes importing: only the deadline ends it
    "hang": ("import", "time.sleep(10 ** 6)\n"),
}
SMALL = {"fork bomb": (("pids", 256),), "100 GiB write": (("disk", 256 << 20),),
         "hang": (("wall", 30.0),)}
#: The hang's wall time in the smoke (CI's time): the deadline ends it all the same.
SMOKE_WALL = 15.0


def probe_bench(when: str, code: str) -> str:
    """head's benchmark file: ``code`` run on import or in the timed call, after the stamp."""
    body = "began()\n" + code
    indented = "".join(f"        {line}\n" for line in body.splitlines())
    call = f"def bench_probe(device):\n    def run():\n{indented}    return run\n"
    return STAMP + (body if when == "import" else "") + "\n\n" + call


def config(max_time: float) -> str:
    return (f'device = "cpu"\nmax_time = {max_time:g}\nprofile = false\n'
            '[selection]\nenabled = false\n')


def run(repo: Path, out: Path, sandboxed: bool, given=(), all_benchmarks=True):
    """One compare of ``repo``'s base and head as the Action runs it: in the sandbox with the
    ``given`` limits over the defaults, or as ``sandbox: none`` (the deadline alone). Returns
    (outcome, seconds, the lines it said, what it printed)."""
    base_sha, head_sha = (git(repo, "rev-parse", ref) for ref in ("base", "head"))
    plan = Plan(event_name="workflow_dispatch", repository="eval/sandbox-limits", workspace=repo,
                base_ref=base_sha, head_ref=head_sha, out_dir=out, all_benchmarks=all_benchmarks,
                sandbox="bwrap" if sandboxed else "none", sandbox_limits=tuple(given))
    said: list[str] = []
    printed = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(printed):
        if sandboxed:
            outcome = compare_in_sandbox(plan, base_sha, head_sha, say=said.append)
        else:
            out.mkdir(parents=True, exist_ok=True)
            bounds = limits.chosen(plan.sandbox_limits, confine.memory_total())
            outcome = compare_mod.run_compare(compare_mod.compare_argv(plan, base_sha, head_sha),
                                              out, timeout=bounds.wall)
            hits = limits.Hits(deadline_passed=outcome.stopped == "deadline",
                               stderr_tail=outcome.stderr_tail,
                               progress=confine.read_progress(out))
            outcome = with_limit(outcome, limits.limit_hit(bounds, hits, "perfgate compare"),
                                 said.append)
    return outcome, time.monotonic() - start, said, printed.getvalue()


def medians(out: Path) -> dict[str, dict]:
    doc = json.loads((out / "results.json").read_text())
    return {b["name"]: {"base": (b.get("base") or {}).get("median"),
                        "head": (b.get("head") or {}).get("median"),
                        "verdict": (b.get("change") or {}).get("verdict"),
                        "ratio": (b.get("change") or {}).get("ratio"),
                        "error": b.get("error") or (b.get("base") or {}).get("error")
                        or (b.get("head") or {}).get("error")} for b in doc["benchmarks"]}


def aa_rounds(tmp: Path, rounds: int, max_time: float) -> list[dict]:
    """``rounds`` pairs of A/A compares, outside then in the sandbox (the order alternates)."""
    base = {"model.py": MODEL, "benchmarks/bench_train.py": BENCH,
            "perfgate.toml": config(max_time)}
    repo = make_repo(tmp / "aa", base, {"NOTES.md": "A/A: head changes this note only\n"})
    rows = []
    for i in range(rounds):
        for sandboxed in ((False, True) if i % 2 == 0 else (True, False)):
            where = "sandbox" if sandboxed else "outside"
            out = tmp / f"aa-{i}-{where}"
            outcome, seconds, said, printed = run(repo, out, sandboxed)
            row = {"round": i + 1, "where": where, "status": outcome.status,
                   "seconds": round(seconds, 1), "error": outcome.last_error_line
                   if outcome.status not in (0, 1) else None,
                   "limits": next((s for s in said if s.startswith("perfgate: sandbox limits")),
                                  None),
                   "warnings": [s for s in said if s.startswith("::warning")],
                   "benchmarks": medians(out) if outcome.status in (0, 1) else {}}
            if outcome.status not in (0, 1):
                row["printed"] = printed[-3000:]
            rows.append(row)
            print(f"A/A {i + 1} {where}: status {outcome.status}, {seconds:.0f} s, "
                  + "; ".join(f"{n} {_ms(b['base'])} / {_ms(b['head'])} {b['verdict']}"
                              for n, b in row["benchmarks"].items()), flush=True)
    return rows


def limit_runs(tmp: Path, smoke: bool = False) -> list[dict]:
    rows = []
    small = {**SMALL, "hang": (("wall", SMOKE_WALL),)} if smoke else SMALL
    base = {"model.py": MODEL, "benchmarks/bench_train.py": BENCH, "perfgate.toml": config(20)}
    for name, (when, code) in PROBES.items():
        repo = make_repo(tmp / name.replace(" ", "-"), base,
                         {"benchmarks/bench_train.py": probe_bench(when, code)})
        out = tmp / f"limit-{name.replace(' ', '-')}"
        outcome, seconds, said, printed = run(repo, out, True, small[name])
        ended = time.time()
        log = (out / "logs" / "worker-head.log")
        stamps = re.findall(r"LIMIT-PROBE-BEGAN (\d+\.\d+)", log.read_text(errors="replace")
                            if log.is_file() else "")
        lines = [s for s in said if s.startswith("::warning") and "sandbox's" in s]
        error = outcome.last_error_line if outcome.status not in (0, 1) else None
        row = {"probe": name, "limit": dict(small[name]), "status": outcome.status,
               "stopped": outcome.stopped, "step_seconds": round(seconds, 1),
               "seconds_after_start": round(ended - float(stamps[0]), 1) if stamps else None,
               "error": error, "warning": lines[0] if lines else None}
        if "wall" in row["limit"]:
            row["seconds_past_limit"] = round(seconds - row["limit"]["wall"], 1)
        if error is None and not lines:
            row["printed"] = printed[-3000:]
        rows.append(row)
        print(f"{name}: status {outcome.status} ({outcome.stopped}), step {seconds:.0f} s, "
              f"{row['seconds_after_start']} s after head's code began: {error or row['warning']}",
              flush=True)
    return rows


def _pooled(aa: list[dict], name: str, where: str) -> float | None:
    """The median of ``name``'s per-call medians (base and head) over the rounds at ``where``."""
    import statistics

    values = [b[side] for row in aa if row["where"] == where
              for n, b in row["benchmarks"].items() if n == name
              for side in ("base", "head") if b.get(side)]
    return statistics.median(values) if values else None


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1e3:.3f} ms"


def page(aa: list[dict], reached: list[dict], args) -> str:
    lines = ["# The sandbox's limits: a training step unaffected, each limit's error timed", "",
             f"`python evaluation/sandbox_limits.py{' --smoke' if args.smoke else ''}` "
             f"({args.rounds} A/A round(s) of {args.max_time:g} s each side).", "",
             "## A/A training steps, default limits in the sandbox vs outside it", "",
             "| round | where | status | s | benchmark | base per call | head per call | "
             "head/base | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for row in aa:
        for name, b in row["benchmarks"].items() or {"–": {}}.items():
            ratio = "–" if b.get("ratio") is None else f"{b['ratio']:.3f}"
            lines.append(f"| {row['round']} | {row['where']} | {row['status']} | "
                         f"{row['seconds']:g} | {name} | {_ms(b.get('base'))} | "
                         f"{_ms(b.get('head'))} | {ratio} | {b.get('verdict', row['error'])} |")
    lines += ["", "Per call, in the sandbox over outside it (the medians of base and head, all "
              "rounds):", ""]
    for name in sorted({n for row in aa for n in row["benchmarks"]}):
        inside, outside = (_pooled(aa, name, where) for where in ("sandbox", "outside"))
        lines.append(f"- {name}: {_ms(inside)} in the sandbox, {_ms(outside)} outside: "
                     + ("–" if not inside or not outside else f"{inside / outside:.3f}×"))
    shown = next((r["limits"] for r in aa if r["limits"]), None)
    if shown:
        lines += ["", f"The sandbox's first line: `{shown}`"]
    lines += ["", "## Each limit reached (small limits)", "",
              "| probe | limit | status | stopped | step s | s after head's code began | "
              "s past the limit | the line |", "|---|---|---|---|---|---|---|---|"]
    for row in reached:
        said = (row["error"] or row["warning"] or "–").replace("|", "\\|")
        lines.append(f"| {row['probe']} | {row['limit']} | {row['status']} | {row['stopped']} | "
                     f"{row['step_seconds']:g} | {row['seconds_after_start']} | "
                     f"{row.get('seconds_past_limit', '–')} | {said} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="A/A rounds (each: outside and inside)")
    ap.add_argument("--max-time", type=float, default=60.0, help="each compare's budget, seconds")
    ap.add_argument("--smoke", action="store_true",
                    help="one round of 12 s, then the limits, the hang's at 15 s (CI)")
    ap.add_argument("--no-limits", action="store_true", help="the A/A rounds only")
    ap.add_argument("--write", help="the Markdown page to write")
    ap.add_argument("--json", help="the raw rows, as JSON")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.max_time = 1, 12.0
    with tempfile.TemporaryDirectory(prefix="perfgate-sandbox-limits-") as t:
        aa = aa_rounds(Path(t), args.rounds, args.max_time)
        reached = [] if args.no_limits else limit_runs(Path(t), args.smoke)
    text = page(aa, reached, args)
    if args.write:
        Path(args.write).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"aa": aa, "limits": reached}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
