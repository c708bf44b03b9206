"""Property tests: any part of a real trace gives a summary whose numbers are defined, and every
consumer (diff, hints, results.json profile, report partials, the table renderer) takes it."""

from __future__ import annotations

import functools
import io
import json
import random

from hypothesis import given, settings, strategies as st
from rich.console import Console

from runner.hints import evidence as hints

from runner.profile import summaries as trace
from runner.cli import trace as profile_cli
from runner.profile import diff as profile_diff, kineto
from tests.conftest import TRACES

SOURCES = ("pytorch18_small.json", "h100_bert-small.json.gz", "mi300_bert-small.json.gz",
           "vllm_rocm_graph_execution.json.gz", "hta_cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
           "gpu_metrics_input.json.gz", "hta_trace_compare_test_test.json.gz")
#: Groups of events a trace may lack (older Kineto, other activities recorded, CPU-only runs).
GROUPS = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation",
          "cpu_instant_event", "Kernel", "Runtime", "Operator", "Memcpy", "Memset")
REGRESSION = {"ratio": 1.3, "ci_low": 1.2, "ci_high": 1.4, "p_value": 0.001, "verdict": "regression"}


@functools.lru_cache(maxsize=None)
def _doc(name):
    return kineto.load_trace(TRACES / name)


@st.composite
def partial_traces(draw):
    doc = _doc(draw(st.sampled_from(SOURCES)))
    dropped = set(draw(st.lists(st.sampled_from(GROUPS), max_size=5)))
    keep = draw(st.floats(0.0, 1.0))
    rng = random.Random(draw(st.integers(0, 2**16)))
    events = [e for e in doc["traceEvents"] if e.get("cat") not in dropped and rng.random() <= keep]
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    if draw(st.booleans()):
        out.pop("deviceProperties", None)
        out.pop("computeProperties", None)
    out["traceEvents"] = events
    return out


def _check(s):
    assert s["device"]["label"] and s["span_us"] >= 0
    numbers = [s["span_us"], s["multi_stream_overlap_us"], s["streams"], s["compile_events"],
               s["operator_totals"]["count"], s["operator_totals"]["self_us"], s["runtime"]["graph_launches"],
               s["runtime"]["launches"]["count"], s["runtime"]["launches"]["total_us"], s["runtime"]["memset"]["count"],
               s["communication"]["count"], s["communication"]["total_us"], *s["kernel_totals"].values()]
    numbers += [v[k] for v in s["runtime"]["calls_by_kind"].values() for k in ("count", "total_us")]
    numbers += [v[k] for v in s["runtime"]["sync"].values() for k in ("count", "total_us")]
    assert all(isinstance(x, (int, float)) for x in numbers)
    if s["kernel_totals"]["count"] or s["runtime"]["memcpy"] or s["runtime"]["memset"]["count"]:
        assert s["gpu_busy_us"] is not None and s["gpu_idle_us"] is not None
        assert s["gpu_busy_us"] + s["gpu_idle_us"] == s["span_us"] or abs(
            s["gpu_busy_us"] + s["gpu_idle_us"] - s["span_us"]) < 0.01


def _templates():
    from runner.report import environment

    return environment()  # the report's own environment: its filters and autoescaping


@settings(max_examples=40, deadline=None)
@given(partial_traces(), partial_traces())
def test_any_part_of_a_real_trace_summarises_and_every_consumer_takes_it(base_doc, head_doc):
    base, head = trace.summarize(base_doc), trace.summarize(head_doc)
    _check(base)
    _check(head)
    json.dumps(trace.compact(base))
    d = profile_diff.diff(base, head)
    json.dumps(d)
    for change in (None, REGRESSION):
        found = hints.hints_for(change, base, head)
        assert all(h["summary"].endswith(".") for h in found)
    profile = profile_diff.profile_for_results(base, head)
    bench = {"name": "b", "change": REGRESSION, "hints": hints.hints_for(REGRESSION, base, head), "profile": profile}
    for fmt in ("md", "html"):
        for partial in ("_hints", "_profile"):
            _templates().get_template(f"{partial}.{fmt}.j2").render(bench=bench)
    profile_cli.render_summary(base, Console(file=io.StringIO(), width=120))
