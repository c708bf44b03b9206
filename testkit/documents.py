"""A results.json document that uses every section the readers show (a regression with hints
and a kernel profile, an improvement with an operator-only profile, a failure with an error, a
removed benchmark, GPU telemetry that differs between sides, an applicable intent), the paths
of its untrusted values, and how to put text there."""

from __future__ import annotations

import json
from functools import lru_cache

from runner.pipeline.machine import telemetry

from runner.hints import evidence as hints

from runner.profile import summaries as trace
from runner.results import new_results, side as side_result
from runner.profile import diff as profile_diff
from testkit.synth import repeat

HEAD, BASE = "1" * 40, "0" * 40

#: Values that steer the readers' logic, not text they show: kept as they are.
_KEEP = {("unit",), ("change", "verdict"), ("intent", "strategy")}

#: maxLength of the schema (database columns), by the last path keys.
MAX_LENGTH = {("name",): 500, ("sha",): 64, ("ref",): 300, ("device_name",): 200, ("torch",): 100,
              ("cuda",): 100, ("driver",): 100, ("cpu",): 190, ("run_url",): 500}


def _bench(name: str, verdict: str, ratio: float | None, *, error: str | None = None, profile=None,
           hint_list=None) -> dict:
    base = [1e-3 * (1 + 0.01 * (i % 3)) for i in range(8)]
    head = [] if ratio is None else [x * ratio for x in base]
    change = {"ratio": ratio, "ci_low": ratio and ratio * 0.98, "ci_high": ratio and ratio * 1.02,
              "p_value": 0.001 if ratio else None, "verdict": verdict, "ci_level": 0.95, "rounds": 8,
              "process_pairs": 2, "between_process_sd": 0.01, "p_adjusted": 0.002,
              "stop_reason": "the interval left the threshold band", "seconds": 1.5}
    return {"name": name, "file": "benchmarks/bench_ops.py", "unit": "s", "base": side_result(base),
            "head": side_result(head, error=error, number=10, warmup_calls=3), "change": change,
            "hints": hint_list or [], "profile": profile}


@lru_cache(maxsize=1)
def _full_json() -> str:
    regression = {"ratio": 1.6, "ci_low": 1.5, "ci_high": 1.7, "p_value": 0.001, "verdict": "regression"}
    b = trace.summarize(repeat(lambda t: t.kernel("void k<float>(float*)", dur=100, regs=40)))
    h = trace.summarize(repeat(lambda t: t.kernel("void k<float>(float*)", dur=160, regs=128)))
    found = [{k: v for k, v in x.items() if not k.startswith("_")} for x in hints.hints_for(regression, b, h)]
    profile = profile_diff.profile_for_results(b, h)
    operators_only = {"base": {**profile["base"], "kernels": []}, "head": {**profile["head"], "kernels": []}}
    base = {"side": "base", "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 50,
            "power_avg_w": 400, "power_limit_w": 700, "memory_utilization_pct": 30, "reasons": 0}
    head = {"side": "head", "sm_clock_mhz": 1500, "memory_clock_mhz": 3201, "temperature_c": 85,
            "power_avg_w": 690, "power_limit_w": 700, "memory_utilization_pct": 30, "reasons": 0x40}
    samples = [base] * 5 + [head] * 5
    benches = [_bench("bench_norm[rows=4096]", "regression", 1.6, profile=profile, hint_list=found),
               _bench("bench_add[n=1024]", "improvement", 0.8, profile=operators_only,
                      hint_list=[{"kind": "launch_overhead", "confidence": 0.5, "summary": "fewer launches",
                                  "evidence": {"launches": {"base": 10, "head": 4}, "note": "x"}}]),
               _bench("bench_boom", "failed", None, error="Traceback (most recent call last):\n  File \"b.py\"\nRuntimeError: boom"),
               _bench("bench_same", "unchanged", 1.0),
               {"name": "bench_gone", "file": "benchmarks/bench_ops.py", "unit": "s", "base": None, "head": None,
                "change": {"ratio": None, "ci_low": None, "ci_high": None, "p_value": None, "verdict": "removed"},
                "hints": [], "profile": None}]
    doc = new_results(
        repository="octo/demo", base={"ref": "main", "sha": BASE}, head={"ref": "feature", "sha": HEAD},
        environment={"device": "cuda", "device_name": "NVIDIA H200", "torch": "2.13.0", "cuda": "12.8",
                     "driver": "570.00", "python": "3.11", "platform": "linux", "cpu": "x86 (16 cores)",
                     "telemetry": telemetry.summarize_samples(samples, device_name="NVIDIA H200", driver="570.00"),
                     "runner_label": "gpu-h200"},
        settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 8, "max_time": 60.0, "max_rounds": 200,
                  "looks": [8, 16, 32], "ci_level": 0.95, "min_sample_time": 0.01, "cold_cache": True,
                  "fail_threshold": 0.05, "process_noise": 0.01, "min_process_pairs": 2, "filter": "bench_*",
                  "profile": True},
        benchmarks=benches,
        intent={"strategy": "kernel_fusion", "confidence": 0.8, "signals": ["title: fuse", "diff: torch.compile"]},
        run_id="pg-1", run_url="https://github.com/octo/demo/actions/runs/1")
    return json.dumps(doc)


def full_document() -> dict:
    """A fresh copy of the document (schema-valid)."""
    return json.loads(_full_json())


def string_paths(doc) -> list[tuple]:
    """Paths (tuples of keys/indexes) of every string value the readers show; dict keys that
    are data (telemetry side names, throttle reasons, evidence) are marked ``("key", ...)``."""
    out: list[tuple] = []

    def walk(value, path):
        if isinstance(value, str):
            names = tuple(p for p in path if isinstance(p, str))
            if not any(names[-len(k):] == k for k in _KEEP) and path[:1] != ("schema_version",):
                out.append(path)
        elif isinstance(value, dict):
            for k, v in value.items():
                if path[-1:] in (("sides",), ("throttle_reasons",), ("evidence",)):
                    out.append(("key",) + path + (k,))
                walk(v, path + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, path + (i,))

    walk(doc, ())
    return out


def _parent(doc, path):
    for p in path[:-1]:
        doc = doc[p]
    return doc


def limit_for(path: tuple) -> int | None:
    names = tuple(p for p in path if isinstance(p, str))
    return next((n for k, n in MAX_LENGTH.items() if names[-len(k):] == k), None)


def set_text(doc, path: tuple, text: str) -> None:
    """Put ``text`` at ``path`` (a value, or a dict key for ``("key", ...)`` paths)."""
    if path[0] == "key":
        parent = _parent(doc, path[1:])
        if path[-1] in parent and text not in parent:
            parent[text] = parent.pop(path[-1])
        return
    limit = limit_for(path)
    _parent(doc, path)[path[-1]] = text[:limit] if limit else text
