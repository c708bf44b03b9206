"""runner.profile (match, diff, hints): kernel matching, the diff, and one test per hint kind on generated traces."""

from __future__ import annotations

import json

import pytest

from runner.hints import evidence as hints

from runner.profile import summaries as trace
from runner.cli.main import main
from runner.pipeline.machine.telemetry import summarize_samples
from runner.profile import diff as profile_diff, match
from testkit.synth import H100, TraceBuilder, repeat, write

REGRESSION = {"ratio": 1.25, "ci_low": 1.2, "ci_high": 1.3, "p_value": 0.001, "verdict": "regression"}
IMPROVEMENT = {"ratio": 0.8, "ci_low": 0.75, "ci_high": 0.85, "p_value": 0.001, "verdict": "improvement"}

ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"


def summary(build_call, calls=3, **kw):
    return trace.summarize(repeat(build_call, calls=calls, **kw))


def kinds(found):
    return [h["kind"] for h in found]


def check_shape(found):
    for h in found:
        assert set(h) == {"kind", "confidence", "summary", "evidence"}
        assert 0 <= h["confidence"] <= 1 and h["summary"].endswith(".")
        json.dumps(h)


# ---- matching ------------------------------------------------------------------------------

def test_kernel_keys_normalise_templates_lambdas_and_triton_indices():
    a = "void at::native::(anonymous namespace)::foo<float, 4>(at::TensorIteratorBase&)::{lambda()#1}"
    assert match.kernel_key(a, "signature") == "at::native::anon::foo<float,4>"
    assert match.kernel_key("triton_poi_fused_add_cos_sin_0", "signature") == "triton_poi_fused_add_cos_sin"
    assert match.kernel_key("triton_poi_fused_add_cos_sin_0", "family") is None
    assert match.kernel_key("ampere_sgemm_128x64_nn", "family") == match.kernel_key("ampere_sgemm_64x32_nn", "family")


def test_match_kernels_levels_and_unmatched():
    base = [{"name": "triton_poi_fused_add_0", "total_us": 5}, {"name": "ampere_sgemm_128x64_nn", "total_us": 9},
            {"name": "only_in_base", "total_us": 1}]
    head = [{"name": "triton_poi_fused_add_3", "total_us": 6}, {"name": "ampere_sgemm_64x64_nn", "total_us": 8},
            {"name": "only_in_head", "total_us": 2}]
    pairs, ub, uh = match.match_kernels(base, head)
    levels = {b["name"]: level for b, h, level in pairs}
    assert levels == {"triton_poi_fused_add_0": "signature", "ampere_sgemm_128x64_nn": "family"}
    assert [k["name"] for k in ub] == ["only_in_base"] and [k["name"] for k in uh] == ["only_in_head"]


def test_diff_is_per_call_when_both_sides_count_calls():
    b = summary(lambda t: t.kernel("k", dur=10), calls=2)
    h = summary(lambda t: t.kernel("k", dur=10, count=2), calls=4)
    d = profile_diff.diff(b, h)
    assert d["per_call"] is True
    assert d["totals"]["kernel_count"] == {"base": 1.0, "head": 2.0, "delta": 1.0}
    assert d["kernels"][0]["delta_us"] == 10.0


# ---- no hints ------------------------------------------------------------------------------

def test_a_a_gives_no_hints():
    s = summary(lambda t: t.kernel("k", dur=50).memcpy("DtoH").op("aten::add"))
    assert hints.hints_for(None, s, s) == []
    assert hints.hints_for({**REGRESSION, "verdict": "unchanged"}, s, s) == []


def test_unchanged_verdict_gives_no_hints_even_with_differences():
    b = summary(lambda t: t.kernel("k", dur=50))
    h = summary(lambda t: t.kernel("k", dur=50).sync(count=10))
    assert hints.hints_for({**REGRESSION, "verdict": "unchanged"}, b, h) == []
    assert hints.hints_for({**REGRESSION, "verdict": "failed"}, b, h) == []


def test_regression_without_profile_difference_is_unexplained():
    s = summary(lambda t: t.kernel("k", dur=50))
    found = hints.hints_for(REGRESSION, s, s)
    assert kinds(found) == ["unexplained"]
    assert "No profile difference explains this" in found[0]["summary"]


def test_missing_profile_gives_no_hints():
    s = summary(lambda t: t.kernel("k", dur=50))
    assert hints.hints_for(REGRESSION, None, s) == []


# ---- one per kind --------------------------------------------------------------------------

def test_register_pressure_from_matched_kernel():
    b = summary(lambda t: t.kernel("void fused_kernel<float>(float*)", dur=100, regs=40, grid=(2048, 1, 1)))
    h = summary(lambda t: t.kernel("void fused_kernel<float>(float*)", dur=160, regs=128, grid=(2048, 1, 1)))
    found = hints.hints_for(REGRESSION, b, h)
    check_shape(found)
    assert found[0]["kind"] == "register_pressure"
    ev = found[0]["evidence"]
    assert ev["registers_per_thread"] == {"base": 40, "head": 128}
    assert ev["occupancy"]["head"] < ev["occupancy"]["base"]
    assert ev["waves"]["head"] > ev["waves"]["base"]
    assert "128 registers per thread" in found[0]["summary"] and "waves" in found[0]["summary"]
    # GPU review #18: a trace shows no spill, and registers, occupancy and time moving together
    # is a correlation: said as one, below the certainty of the compiler's own numbers
    assert "not that one caused the other, nor whether it spills" in found[0]["summary"]
    assert found[0]["confidence"] <= 0.65


def test_register_pressure_from_fusion():
    def base_call(t):
        t.kernel("triton_poi_fused_mul_0", dur=30, regs=24, grid=(4096, 1, 1), block=(128, 1, 1))
        t.kernel("triton_poi_fused_add_1", dur=30, regs=26, grid=(4096, 1, 1), block=(128, 1, 1))

    def head_call(t):
        t.kernel("triton_poi_fused_add_mul_0", dur=90, regs=255, grid=(512, 1, 1), block=(32, 1, 1))

    found = hints.hints_for(REGRESSION, summary(base_call), summary(head_call))
    assert found[0]["kind"] == "register_pressure"
    assert found[0]["evidence"]["replaced"] == ["triton_poi_fused_mul_0", "triton_poi_fused_add_1"]
    assert "new_kernels" in kinds(found)


def test_register_pressure_relief_explains_improvement():
    b = summary(lambda t: t.kernel("k<float>", dur=160, regs=128))
    h = summary(lambda t: t.kernel("k<float>", dur=100, regs=40))
    found = hints.hints_for(IMPROVEMENT, b, h)
    assert found[0]["kind"] == "register_pressure" and "rose" in found[0]["summary"]
    assert hints.hints_for(REGRESSION, b, h)[0]["kind"] == "unexplained"


def test_sync_overhead_from_item_in_a_loop():
    def base_call(t):
        for _ in range(8):
            t.kernel("void reduce_kernel<float>()", dur=3)
        t.memcpy("DtoH", nbytes=4)

    def head_call(t):
        for _ in range(8):
            t.kernel("void reduce_kernel<float>()", dur=3)
            t.memcpy("DtoH", nbytes=4)

    found = hints.hints_for(REGRESSION, summary(base_call), summary(head_call))
    check_shape(found)
    assert found[0]["kind"] == "sync_overhead"
    ev = found[0]["evidence"]
    assert ev["sync"]["cudaStreamSynchronize"]["base"]["count"] == 1
    assert ev["sync"]["cudaStreamSynchronize"]["head"]["count"] == 8
    assert ev["dtoh_pageable_copies"]["delta"] == 7
    assert "7 more host synchronisations per call" in found[0]["summary"]


def test_memory_contention_from_overlap_and_slower_same_kernels():
    def base_call(t):
        t.kernel(ELEMENTWISE, dur=100, stream=7, count=2)
        t.kernel("ampere_sgemm_128x64_nn", dur=150, stream=9, start=t.gpu_t[7] + 50)

    def head_call(t):
        start = t.gpu_t.get(7, 0) + 500
        t.kernel(ELEMENTWISE, dur=180, stream=7, count=2, start=start)
        t.kernel("void copy_kernel<float>()", dur=300, stream=9, start=start)

    found = hints.hints_for(REGRESSION, summary(base_call), summary(head_call))
    check_shape(found)
    assert found[0]["kind"] == "memory_contention"
    ev = found[0]["evidence"]
    assert ev["kernels"][0]["mean_us"] == {"base": 100.0, "head": 180.0}
    assert ev["multi_stream_overlap_us"]["head"] > ev["multi_stream_overlap_us"]["base"]


#: Two float tensors of 64 Mi elements each (512 MiB of roofline bytes), as aten::mul reads them.
BIG_MUL = {"name": "aten::mul", "types": ["float", "float"], "dims": [[1 << 26], [1 << 26]],
           "flops": 1 << 26}
#: A bf16 GEMM 4096^3 (2 x 4096^3 FLOP over 96 MiB): compute-bound on any GPU.
GEMM = {"name": "aten::mm", "types": ["c10::BFloat16", "c10::BFloat16"],
        "dims": [[4096, 4096], [4096, 4096]]}
SMALL_MUL = {"name": "aten::mul", "types": ["float", "float"], "dims": [[1 << 20], [1 << 20]],
             "flops": 1 << 20}


def _contention(side_op, side_us, mul=BIG_MUL, mul_us=(300, 420)):
    """Base: a mul on stream 7, then ``side_op`` on stream 9 after it; head: the two at once, the
    mul slower. H100 traces whose operators carry the tensors' sizes (the roofline bytes)."""
    def base_call(t):
        t.kernel(ELEMENTWISE, dur=mul_us[0], stream=7, op=mul)
        t.kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", dur=side_us, stream=9,
                 start=t.gpu_t[7] + 50, op=side_op)

    def head_call(t):
        start = max(t.gpu_t.values(), default=0) + 500
        t.kernel(ELEMENTWISE, dur=mul_us[1], stream=7, start=start, op=mul)
        t.kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", dur=side_us, stream=9,
                 start=start, op=side_op)

    b = summary(base_call, props=H100)
    h = summary(head_call, props=H100)
    return [x for x in hints.hints_for(REGRESSION, b, h) if x["kind"] == "memory_contention"]


def test_contention_is_for_memory_bandwidth_only_when_the_streams_bytes_near_the_peak():
    """GPU review #18: a trace shows no DRAM throughput. Two streams each reading 512 MiB in 300-420
    µs draw ~3 TB/s together, 90 % of an H100's 3.35 TB/s: memory bandwidth. A mul beside a
    compute-bound GEMM draws a few % of it: the streams contend for the SMs, not bandwidth."""
    (mem,) = _contention(BIG_MUL, 300)
    assert "compete for memory bandwidth" in mem["summary"]
    assert "92% of the GPU's 3350 GB/s" in mem["summary"]
    assert mem["evidence"]["bandwidth"]["share"] >= 0.7
    assert mem["evidence"]["bandwidth"]["streams"] == 2
    (sms,) = _contention(GEMM, 1000, mul=SMALL_MUL, mul_us=(40, 56))
    assert "the SMs and caches, not memory bandwidth" in sms["summary"]
    assert "compete for memory bandwidth" not in sms["summary"]
    assert sms["evidence"]["bandwidth"]["share"] < 0.15


def test_nvml_memory_utilisation_is_no_evidence_of_memory_contention():
    """GPU review #10: NVML's memory utilisation is a duty cycle over 1/6-1 s windows that mix
    both sides, not bandwidth: 95 % during head says nothing of saturation."""
    b = summary(lambda t: t.kernel(ELEMENTWISE, dur=100))
    h = summary(lambda t: t.kernel(ELEMENTWISE, dur=150))
    samples = [{"side": "base", "memory_utilization_pct": 50, "sm_clock_mhz": 1980}] * 5 + \
              [{"side": "head", "memory_utilization_pct": 95, "sm_clock_mhz": 1980}] * 5
    found = hints.hints_for(REGRESSION, b, h, summarize_samples(samples))
    assert [f["kind"] for f in found] == ["kernel_time"]
    assert "memory_utilization_pct" not in found[0]["evidence"]


def test_kernel_time_when_same_kernel_slower_without_cause():
    b = summary(lambda t: t.kernel(ELEMENTWISE, dur=100))
    h = summary(lambda t: t.kernel(ELEMENTWISE, dur=150))
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "kernel_time"
    assert "no new overlap or register change" in found[0]["summary"]


def test_launch_overhead_more_launches_same_work():
    b = summary(lambda t: t.kernel("void multi_tensor_apply_kernel<4>()", dur=40))
    h = summary(lambda t: t.kernel("void elementwise_kernel<float>()", dur=4, count=10))
    found = hints.hints_for(REGRESSION, b, h)
    check_shape(found)
    assert found[0]["kind"] == "launch_overhead"
    assert found[0]["evidence"]["launches"] == {"base": 1.0, "head": 10.0, "delta": 9.0}


def test_launch_overhead_cpu_operator_calls():
    b = summary(lambda t: t.op("aten::add", dur=20), props=None, gpu=False)
    h = summary(lambda t: t.op("aten::add", dur=3, count=12), props=None, gpu=False)
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "launch_overhead"
    assert "operator calls" in found[0]["summary"]


def test_host_device_copy():
    b = summary(lambda t: t.kernel("k", dur=50))
    h = summary(lambda t: t.memcpy("HtoD", nbytes=64 << 20, dur=400, pageable=True, sync=False).kernel("k", dur=50))
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "host_device_copy"
    assert found[0]["evidence"]["memcpy"]["HtoD"]["head"]["bytes"] == 64 << 20


def test_gpu_idle_host_bound():
    b = summary(lambda t: t.kernel("k", dur=100))
    h = summary(lambda t: t.op("aten::python_heavy", dur=400).kernel("k", dur=100))
    found = hints.hints_for(REGRESSION, b, h)
    assert "gpu_idle" in kinds(found)
    ev = next(x for x in found if x["kind"] == "gpu_idle")["evidence"]
    assert ev["idle_share"]["head"] > ev["idle_share"]["base"] + 0.1


def test_memory_growth():
    b = summary(lambda t: t.memory(100 << 20).kernel("k", dur=100))
    h = summary(lambda t: t.memory(300 << 20).kernel("k", dur=110))
    found = hints.hints_for(REGRESSION, b, h)
    mg = next(x for x in found if x["kind"] == "memory_growth")
    assert mg["evidence"]["peak_memory_bytes"] == {"base": 100 << 20, "head": 300 << 20, "delta": 200 << 20}
    assert "100.0 MiB to 300.0 MiB (3× larger)" in mg["summary"]  # the reports' one form
    b = summary(lambda t: t.memory(2 << 20).kernel("k", dur=100))
    h = summary(lambda t: t.memory(196_620).kernel("k", dur=10))
    fell = next(x for x in hints.hints_for(IMPROVEMENT, b, h) if x["kind"] == "memory_growth")
    # the demo's "from 2.0 MiB to 0.2 MiB (-91%)" beside "10.6× smaller" in its memory column
    assert "fell from 2.0 MiB to 192.0 KiB (10.7× smaller)" in fell["summary"]


def test_new_kernels():
    b = summary(lambda t: t.kernel("void relu_kernel<float>()", dur=50))
    h = summary(lambda t: t.kernel("void relu_kernel<float>()", dur=50).kernel("void extra_pass_kernel()", dur=60))
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "new_kernels"
    assert found[0]["evidence"]["new"][0]["name"] == "void extra_pass_kernel()"


def test_precision_change():
    b = summary(lambda t: t.kernel("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", dur=100))
    h = summary(lambda t: t.kernel("sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32", dur=130))
    found = hints.hints_for(REGRESSION, b, h)
    pc = next(x for x in found if x["kind"] == "precision_change")
    assert pc["evidence"]["share"]["head"] == {"bf16": 1.0}
    assert "bf16" in pc["summary"]


def test_recompilation():
    b = summary(lambda t: t.op("Torch-Compiled Region: 0/0", dur=50), props=None, gpu=False)
    h = summary(lambda t: t.op("Torch-Compiled Region: 0/0", dur=50).op("torch._dynamo.convert_frame.compile_inner", dur=500),
                props=None, gpu=False)
    found = hints.hints_for(REGRESSION, b, h)
    assert "recompilation" in kinds(found)


def test_cpu_operator_time_and_new_operators():
    b = summary(lambda t: t.op("aten::mm", dur=100).op("aten::relu", dur=10), props=None, gpu=False)
    h = summary(lambda t: t.op("aten::mm", dur=200).op("aten::relu", dur=10), props=None, gpu=False)
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "operator_time"
    assert "aten::mm self time grew from 100.0 µs to 200.0 µs per call" in found[0]["summary"]
    h2 = summary(lambda t: t.op("aten::mm", dur=100).op("aten::relu", dur=10).op("aten::contiguous", dur=80),
                 props=None, gpu=False)
    found = hints.hints_for(REGRESSION, b, h2)
    assert found[0]["kind"] == "new_operators" and "aten::contiguous" in found[0]["summary"]


def test_throttling_from_telemetry_flags():
    s = summary(lambda t: t.kernel("k", dur=100))
    samples = [{"side": "base", "sm_clock_mhz": 1980, "reasons": 0}] * 10 + \
              [{"side": "head", "sm_clock_mhz": 1500, "reasons": 0x20}] * 10
    found = hints.hints_for(REGRESSION, s, s, summarize_samples(samples))
    assert kinds(found) == ["throttling"]
    assert "1980 MHz" in found[0]["summary"] and "sw_thermal_slowdown" in found[0]["summary"]
    assert "the environment, not the code" in found[0]["summary"]


def test_a_head_that_alone_hits_the_power_cap_is_the_change_not_the_environment():
    # GPU review #11: under GPU Boost a head that draws more power runs at a lower clock: a real
    # cost of the change on this GPU, which the hint called "the environment, not the code"
    s = summary(lambda t: t.kernel("k", dur=100))
    samples = [{"side": "base", "sm_clock_mhz": 1980, "reasons": 0}] * 10 + \
              [{"side": "head", "sm_clock_mhz": 1600, "reasons": 0x4}] * 10
    found = hints.hints_for(REGRESSION, s, s, summarize_samples(samples))
    assert kinds(found) == ["throttling"]
    assert "environment" not in found[0]["summary"] and "power-capped" in found[0]["summary"]
    assert "1600 MHz vs base 1980 MHz" in found[0]["summary"]


def test_inconclusive_gets_half_confidence():
    b = summary(lambda t: t.kernel("k<float>", dur=100, regs=40))
    h = summary(lambda t: t.kernel("k<float>", dur=160, regs=128))
    full = hints.hints_for(REGRESSION, b, h)[0]["confidence"]
    half = hints.hints_for({**REGRESSION, "verdict": "inconclusive"}, b, h)[0]["confidence"]
    assert half == pytest.approx(full / 2, abs=0.01)


def test_trace_diff_infers_direction_from_the_traces():
    b = summary(lambda t: t.kernel("k<float>", dur=100, regs=40))
    h = summary(lambda t: t.kernel("k<float>", dur=160, regs=128))
    assert hints.hints_for(None, b, h)[0]["kind"] == "register_pressure"


def test_side_by_side_rows_and_profile_for_results():
    b = summary(lambda t: t.kernel("a", dur=10).kernel("b", dur=5))
    h = summary(lambda t: t.kernel("a", dur=12).kernel("c", dur=7))
    rows = profile_diff.side_by_side(b, h)
    by = {r["name"]: r for r in rows}
    assert by["a"]["delta_us"] == 2.0 and by["b"]["match"] == "base only" and by["c"]["head_count"] == 1
    prof = profile_diff.profile_for_results(b, h)
    assert set(prof) == {"base", "head", "kernels"} and json.dumps(prof)


def test_cli_trace_diff_json(tmp_path, capsys):
    b = write(repeat(lambda t: t.kernel("k<float>", dur=100, regs=40)), tmp_path / "b.json.gz")
    h = write(repeat(lambda t: t.kernel("k<float>", dur=160, regs=128)), tmp_path / "h.json")
    assert main(["trace-diff", str(b), str(h), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"base", "head", "hints"} <= set(out)
    assert out["hints"][0]["kind"] == "register_pressure"
    assert main(["trace-diff", str(b), str(h)]) == 0
    assert "register_pressure" in capsys.readouterr().out


def test_device_change():
    from testkit.synth import A100

    b = summary(lambda t: t.kernel("k", dur=100))
    h = summary(lambda t: t.kernel("k", dur=130), props={**A100, "name": "Tesla V100-SXM2-16GB", "computeMajor": 7})
    found = hints.hints_for(REGRESSION, b, h)
    assert found[0]["kind"] == "device_change" and "Tesla V100" in found[0]["summary"]


def test_a_hint_is_one_decorated_function(monkeypatch):
    """A rule registered with ``@rule(kind)`` is run by hints_for over the one HintContext, its
    hint ranked where ``RANKING`` lists its kind; a kind not ranked, or with a rule already, is
    refused."""
    from runner.hints import rule as hint_rule

    monkeypatch.setattr(hint_rule, "RULES", list(hint_rule.RULES))
    monkeypatch.setattr(hint_rule, "RANKING", hint_rule.RANKING + ("toy_cause",))
    seen = []

    @hint_rule.rule("toy_cause")
    def toy(ctx):
        seen.append((ctx.sign, ctx.unit, ctx.gpu))
        return hint_rule.make_hint("toy_cause", 1.0, "A toy cause.", {}, ctx.observed * ctx.sign)

    base = summary(lambda t: t.kernel(ELEMENTWISE, dur=100))
    head = summary(lambda t: t.kernel(ELEMENTWISE, dur=200))
    found = hints.hints_for(REGRESSION, base, head)
    assert seen == [(1, "per call", True)]
    assert found[0]["kind"] == "toy_cause" and found[0]["evidence"]["share_of_change"] == 1.0
    assert hint_rule.place("toy_cause") == len(hint_rule.RANKING) - 1
    assert hint_rule.place("no_such_cause") == len(hint_rule.RANKING)
    assert hint_rule.RANKING[:3] == ("register_pressure", "sync_overhead", "memory_contention")
    with pytest.raises(ValueError, match="registered twice"):
        hint_rule.rule("toy_cause")(toy)
    with pytest.raises(ValueError, match="not ranked"):
        hint_rule.rule("other_cause")(toy)


def test_equal_confidences_rank_by_the_kinds_place_in_the_ranking():
    """Among equal confidences the kind listed first in ``RANKING`` comes first, whichever module
    made the hint; every kind is listed once."""
    from runner.hints import rule as hint_rule

    assert len(set(hint_rule.RANKING)) == len(hint_rule.RANKING)
    assert {r.kind for r in hint_rule.RULES} <= set(hint_rule.RANKING)
    made = [hint_rule.make_hint(kind, 0.5, kind, {})
            for kind in ("unexplained", "operator_time", "throttling", "kernel_time",
                         "register_pressure", "toy")]
    assert [h["kind"] for h in hints._finish(made, 1.0)] == ["register_pressure", "throttling",
                                                             "kernel_time", "operator_time",
                                                             "unexplained", "toy"]
