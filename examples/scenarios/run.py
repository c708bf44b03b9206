"""Run the scenarios on a CUDA GPU: time base and head, profile both, print the hints.

``python -m examples.scenarios.run [NAME...]`` prints one JSON line per scenario:
``{scenario, expected, ratio, base_ms, head_ms, hints: [kind...], top, figures}``.
"""

from __future__ import annotations

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


def run_scenario(name: str, out_dir: str | None = None) -> dict:
    """Profile and time one scenario; returns the figures and the ranked hints."""
    from runner.profile.diff import side_by_side
    from runner.profile.hints import hints_for
    from runner.profile.summaries import summarize
    from runner.worker.profiling import profile_callable

    mod = importlib.import_module(f"examples.scenarios.{name}")
    out = Path(out_dir or tempfile.mkdtemp(prefix=f"perfgate-{name}-"))
    fns = {"base": mod.base("cuda"), "head": mod.head("cuda")}
    ms = {side: time_ms(fn) for side, fn in fns.items()}
    summaries = {}
    for side, fn in fns.items():
        info = profile_callable(fn, device="cuda", trace_path=str(out / side / f"{name}.json.gz"), calls=5)
        summaries[side] = summarize(info["trace_path"])
    ratio = ms["head"] / ms["base"]
    verdict = "regression" if ratio > 1.02 else "improvement" if ratio < 0.98 else "unchanged"
    change = {"ratio": ratio, "ci_low": None, "ci_high": None, "p_value": None, "verdict": verdict}
    found = hints_for(change, summaries["base"], summaries["head"])
    rows = side_by_side(summaries["base"], summaries["head"], top=4)
    return {"scenario": name, "expected": mod.EXPECTED_HINT, "ratio": round(ratio, 4),
            "base_ms": round(ms["base"], 4), "head_ms": round(ms["head"], 4), "verdict": verdict,
            "hints": [h["kind"] for h in found], "top": found[0] if found else None,
            "kernels": rows, "traces": str(out)}


def main(argv: list[str]) -> int:
    from examples.scenarios import SCENARIOS

    for name in argv or SCENARIOS:
        mod = importlib.import_module(f"examples.scenarios.{name}")
        if not mod.available():
            print(json.dumps({"scenario": name, "skipped": "dependency missing"}))
            continue
        print(json.dumps(run_scenario(name), default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
