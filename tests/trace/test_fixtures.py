"""The real Kineto traces in ../shared/fixtures (skipped when absent, e.g. on a fresh clone)."""

from __future__ import annotations

import functools
import json

from runner import hints, trace

KINETO = "kineto"


@functools.lru_cache(maxsize=None)
def _summary(path):
    return trace.summarize(path)


def _files(shared):
    files = sorted((shared / KINETO).glob("*.json*"))
    assert files, "no traces in the fixtures folder"
    return files


def test_every_fixture_summarises(shared_fixtures):
    for path in _files(shared_fixtures):
        s = _summary(path)
        c = trace.compact(s)
        json.dumps(c)
        assert s["span_us"] >= 0 and s["gpu_busy_us"] <= s["span_us"] + 1e-6, path.name
        assert len(c["kernels"]) <= 25 and len(c["operators"]) <= 25


def test_alexnet_synchronisations_and_kernels(shared_fixtures):
    [path] = (shared_fixtures / KINETO).glob("hta_critical_path_alexnet_*")
    s = _summary(path)
    assert s["runtime"]["sync"]["cudaStreamSynchronize"]["count"] == 16
    assert s["runtime"]["sync"]["cudaDeviceSynchronize"]["count"] == 5
    assert s["kernel_totals"]["count"] == 79
    assert s["device_name"].startswith("NVIDIA A100")
    assert s["runtime"]["cuda_sync"]["Stream Sync"] == 16
    k = next(k for k in s["kernels"] if k["registers_per_thread"] and k["est_achieved_occupancy"] is not None)
    assert 0 < k["occupancy"] <= 1 and 0 <= k["est_achieved_occupancy"] <= 1


def test_cpu_only_trace_has_operators(shared_fixtures):
    [path] = (shared_fixtures / KINETO).glob("hta_cpu_only_*")
    s = _summary(path)
    assert s["kernels"] == [] and s["gpu_idle_us"] is None
    assert s["operators"] and s["operators"][0]["name"] == "aten::empty"


def test_triton_kernel_name_and_occupancy(shared_fixtures):
    [path] = (shared_fixtures / KINETO).glob("hta_triton_example_*")
    s = _summary(path)
    [k] = s["kernels"]
    assert k["name"] == "triton_poi_fused_add_cos_sin_0" and k["grid"] == [1, 1, 1] and k["waves"] == 1


def test_trace_compare_pair_diff_names_the_kernels_that_differ(shared_fixtures):
    folder = shared_fixtures / KINETO
    base = trace.summarize(next(folder.glob("hta_trace_compare_base_*")))
    head = trace.summarize(next(folder.glob("hta_trace_compare_test_*")))
    d = hints.diff(base, head)
    changed = [k for k in d["kernels"] if k["delta_us"] != 0 or k["base"]["count"] != k["head"]["count"]]
    assert [k["name"] for k in changed] == [
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3> >"
        "(int, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3>)"]
    assert changed[0]["base"]["count"] == 1.5 and changed[0]["head"]["count"] == 1.0  # per call, 2 steps
    assert {o["name"] for o in d["new_operators"]} == {"All2All_Pooled_Req", "AddmmBackward0", "CatBackward0"}
    assert d["unmatched_base"] == [] and d["unmatched_head"] == []


def test_trace_diff_pair_a100_vs_v100(shared_fixtures):
    folder = shared_fixtures / KINETO
    base = _summary(next(folder.glob("hta_trace_diff_control_*")))
    head = _summary(next(folder.glob("hta_trace_diff_test_*")))
    d = hints.diff(base, head)
    assert d["unmatched_base"] and d["unmatched_head"]  # cuBLAS picks other GEMM kernels on V100
    assert any(k["match"] == "family" for k in d["kernels"])
    found = hints.hints_for(None, base, head)
    assert found and all(h["kind"] != "unexplained" for h in found)
    assert found[0]["kind"] == "device_change"
    assert any(h["kind"] == "precision_change" for h in found)  # the A100's TF32 GEMMs are gone on V100
