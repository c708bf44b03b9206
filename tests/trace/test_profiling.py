"""runner.worker.profiling on CPU, for real: the produced trace opens and summarises."""

from __future__ import annotations

import gzip
import json

import pytest

torch = pytest.importorskip("torch")

from runner.hints import evidence as hints  # noqa: E402
from runner.profile.kineto import load_trace  # noqa: E402
from runner.profile import summaries as trace  # noqa: E402
from runner.worker.profiling import profile_callable  # noqa: E402


def test_profile_callable_cpu_writes_a_gzipped_trace_that_summarises(tmp_path):
    x = torch.randn(64, 64)
    path = tmp_path / "traces" / "base" / "bench_mm.json.gz"
    info = profile_callable(lambda: (x @ x).relu(), device="cpu", trace_path=str(path), calls=3)
    assert info["trace_path"] == str(path) and info["calls"] == 3 and path.stat().st_size == info["bytes"]
    with gzip.open(path, "rt") as f:  # plain gzip JSON: what Perfetto and chrome://tracing open
        assert "traceEvents" in json.load(f)
    s = trace.summarize(load_trace(path))
    assert s["iterations"] == 3
    ops = {o["name"]: o for o in s["operators"]}
    assert ops["aten::mm"]["count"] == 3 and ops["aten::relu"]["count"] == 3
    assert s["kernels"] == [] and s["device_name"] is None
    assert hints.hints_for(None, s, s) == []


def test_profile_callable_cpu_extra_work_is_explained(tmp_path):
    x = torch.randn(64, 64)

    def head():
        y = x
        for _ in range(20):
            y = y.clone()
        return (y @ x).relu()

    b = trace.summarize(load_trace(profile_callable(lambda: (x @ x).relu(), device="cpu",
                                                    trace_path=str(tmp_path / "b.json.gz"), calls=3)["trace_path"]))
    h = trace.summarize(load_trace(profile_callable(head, device="cpu", trace_path=str(tmp_path / "h.json.gz"),
                                                    calls=3)["trace_path"]))
    found = hints.hints_for({"ratio": 1.5, "ci_low": 1.4, "ci_high": 1.6, "p_value": 0.01, "verdict": "regression"}, b, h)
    assert found and {"launch_overhead", "new_operators"} & {f["kind"] for f in found}
