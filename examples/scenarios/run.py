"""Run the scenarios: time base and head, profile both, print the hints.

``python -m examples.scenarios.run [NAME...] [--out DIR]`` on a CUDA GPU prints one JSON line per
scenario: ``{scenario, expected, ratio, base_ms, head_ms, verdict, hints: [kind...], top, kernels,
traces}`` (a scenario whose dependency is missing says so and is skipped).

``--recorded`` (alias ``--smoke``) runs the same analysis on a CPU, on each scenario's recorded
traces (:mod:`examples.scenarios.recorded`: the root cause laid onto a real H100 trace) instead
of timing and profiling on a GPU. Exit status 1 when a scenario's first hint is not its own root
cause, else 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
from pathlib import Path


def time_ms(fn, repeats: int = 30) -> float:
    """Median milliseconds per call with CUDA events (after three warm-up calls)."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def analyse(name: str, traces: dict[str, Path], ms: dict[str, float]) -> dict:
    """The scenario's result from its two traces and times (pure but for reading the traces).

    Args:
        name: a scenario of :data:`examples.scenarios.SCENARIOS`.
        traces: ``{"base": path, "head": path}`` of Kineto traces.
        ms: ``{"base": ms, "head": ms}`` per call.

    Returns:
        ``{scenario, expected, ratio, base_ms, head_ms, verdict, hints, top, kernels, traces}``;
        the verdict is ``regression`` above a ratio of 1.02, ``improvement`` below 0.98.
    """
    from runner.profile.diff import side_by_side
    from runner.hints.evidence import hints_for
    from runner.profile.kineto import load_trace
    from runner.profile.summaries import summarize

    mod = importlib.import_module(f"examples.scenarios.{name}")
    summaries = {side: summarize(load_trace(path)) for side, path in traces.items()}
    ratio = ms["head"] / ms["base"]
    verdict = "regression" if ratio > 1.02 else "improvement" if ratio < 0.98 else "unchanged"
    change = {"ratio": ratio, "ci_low": None, "ci_high": None, "p_value": None, "verdict": verdict}
    found = hints_for(change, summaries["base"], summaries["head"])
    rows = side_by_side(summaries["base"], summaries["head"], top=4)
    return {"scenario": name, "expected": mod.EXPECTED_HINT, "ratio": round(ratio, 4),
            "base_ms": round(ms["base"], 4), "head_ms": round(ms["head"], 4), "verdict": verdict,
            "hints": [h["kind"] for h in found], "top": found[0] if found else None,
            "kernels": rows, "traces": str(Path(traces["head"]).parent.parent)}


def run_scenario(name: str, out_dir: str | None = None) -> dict:
    """Time and profile one scenario on the GPU, then :func:`analyse` it; the traces are kept
    under ``out_dir/{base,head}/NAME.json.gz``."""
    from runner.worker.profiling import profile_callable

    mod = importlib.import_module(f"examples.scenarios.{name}")
    out = Path(out_dir or tempfile.mkdtemp(prefix=f"perfgate-{name}-"))
    fns = {"base": mod.base("cuda"), "head": mod.head("cuda")}
    ms = {side: time_ms(fn) for side, fn in fns.items()}
    traces = {}
    for side, fn in fns.items():
        info = profile_callable(fn, device="cuda", trace_path=str(out / side / f"{name}.json.gz"), calls=5)
        traces[side] = Path(info["trace_path"])
    return analyse(name, traces, ms)


def recorded_scenario(name: str, out_dir: str | None = None) -> dict:
    """:func:`analyse` on the scenario's recorded traces (:mod:`examples.scenarios.recorded`), on
    any machine. The traces carry no timing of their own: a side's time per call is the larger
    relative change of the trace's span and of its GPU busy time (the head's edit lengthens one
    or the other)."""
    from runner.profile.kineto import load_trace
    from runner.profile.summaries import summarize

    from . import recorded

    out = Path(out_dir or tempfile.mkdtemp(prefix=f"perfgate-{name}-recorded-"))
    base, head = recorded.write_pair(name, out)
    sb, sh = summarize(load_trace(base)), summarize(load_trace(head))
    factor = max(sh["span_us"] / sb["span_us"], (sh["gpu_busy_us"] or 0) / (sb["gpu_busy_us"] or 1))
    ms = {"base": sb["span_us"] / 1000, "head": sb["span_us"] / 1000 * factor}
    return analyse(name, {"base": base, "head": head}, ms)


def main(argv: list[str] | None = None) -> int:
    """See the module docstring."""
    from examples.scenarios import SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=[], metavar="NAME",
                        help=f"scenarios to run (default: all of {', '.join(SCENARIOS)})")
    parser.add_argument("--recorded", "--smoke", action="store_true",
                        help="analyse each scenario's recorded traces on this machine (no GPU)")
    parser.add_argument("--out", help="folder for the traces (default: a temporary one per scenario)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r} (there are: {', '.join(SCENARIOS)})")
    wrong = 0
    for name in args.names or SCENARIOS:
        out = str(Path(args.out) / name) if args.out else None
        if args.recorded:
            result = recorded_scenario(name, out)
        else:
            mod = importlib.import_module(f"examples.scenarios.{name}")
            if not mod.available():
                print(json.dumps({"scenario": name, "skipped": "dependency missing (CUDA or triton)"}))
                continue
            result = run_scenario(name, out)
        wrong += (result["hints"] or [None])[0] != result["expected"]
        print(json.dumps(result, default=str), flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
