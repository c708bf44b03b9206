"""A schema-valid results.json document without running the engine."""

from __future__ import annotations

from runner.results import new_results, side as side_result

ENVIRONMENT = {"device": "cpu", "device_name": None, "torch": None, "cuda": None, "driver": None,
               "python": "3.11", "platform": "linux", "cpu": "test", "telemetry": None}
SETTINGS = {"threshold": 0.02, "alpha": 0.05, "min_rounds": 4, "max_time": 5.0, "min_sample_time": 0.01}


def bench(name: str, verdict: str, ratio: float) -> dict:
    return {"name": name, "file": "benchmarks/bench_work.py", "unit": "s",
            "base": side_result([1e-3, 1.1e-3]), "head": side_result([ratio * 1e-3, ratio * 1.1e-3]),
            "change": {"ratio": ratio, "ci_low": ratio * 0.98, "ci_high": ratio * 1.02, "p_value": 0.001,
                       "verdict": verdict},
            "hints": [], "profile": None}


def results_doc(benchmarks: list[dict] | None = None, base_sha: str = "a" * 40, head_sha: str = "b" * 40) -> dict:
    benchmarks = benchmarks if benchmarks is not None else [bench("bench_sum", "regression", 4.0)]
    return new_results(repository="octo/demo", base={"ref": base_sha, "sha": base_sha},
                       head={"ref": head_sha, "sha": head_sha}, environment=ENVIRONMENT, settings=SETTINGS,
                       benchmarks=benchmarks)
