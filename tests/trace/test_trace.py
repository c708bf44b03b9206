"""runner.profile (kineto, summaries): loading, the summary's numbers, compact(), and ``perfgate trace-summary``."""

from __future__ import annotations

import gzip
import json

import pytest

from runner.profile import roofline

from runner.profile import summaries as trace
from runner.profile.kernels import kernel_dtype
from runner.cli.main import main
from runner.errors import UserError
from runner.profile import kineto
from testkit.synth import A100, TraceBuilder, repeat, write


def _gpu_trace():
    def call(b):
        b.kernel("void gemm_kernel<float>(float*)", dur=100, regs=64, block=(256, 1, 1), grid=(432, 1, 1))
        b.kernel("void small_kernel(int)", dur=4, regs=16, count=2)
        b.memcpy("DtoH", nbytes=4, dur=2)
        b.sync("cudaDeviceSynchronize")

    return repeat(call, calls=4)


def test_summary_counts_kernels_runtime_and_copies():
    s = trace.summarize(_gpu_trace())
    assert s["device_name"] == A100["name"]
    assert s["iterations"] == 4
    gemm = next(k for k in s["kernels"] if k["name"].startswith("void gemm"))
    assert (gemm["count"], gemm["total_us"], gemm["mean_us"]) == (4, 400.0, 100.0)
    assert gemm["registers_per_thread"] == 64 and gemm["block"] == [256, 1, 1] and gemm["grid"] == [432, 1, 1]
    rt = s["runtime"]
    assert rt["launches"]["count"] == 12
    assert rt["sync"]["cudaStreamSynchronize"]["count"] == 4
    assert rt["sync"]["cudaDeviceSynchronize"]["count"] == 4
    assert rt["sync"]["cudaEventSynchronize"] == {"count": 0, "total_us": 0.0}
    assert rt["memcpy"]["DtoH"] == {"count": 4, "bytes": 16, "total_us": 8.0, "pageable_count": 4}
    assert s["kernel_totals"]["small_count"] == 8
    assert s["gpu_busy_us"] == pytest.approx(4 * (100 + 4 + 4 + 2))
    assert s["gpu_idle_us"] == pytest.approx(s["span_us"] - s["gpu_busy_us"])


def test_occupancy_is_recomputed_and_trace_estimate_kept():
    b = TraceBuilder()
    b.kernel("k64", regs=64, block=(256, 1, 1), grid=(432 * 2, 1, 1), est_occ=47)
    b.kernel("k255", regs=255, block=(256, 1, 1), grid=(432, 1, 1))
    s = trace.summarize(b.build())
    k64 = next(k for k in s["kernels"] if k["name"] == "k64")
    # 64 regs x 32 threads = 2048 regs per warp -> 32 warps per SM -> 4 blocks of 8 warps -> 50 %
    assert k64["occupancy"] == 0.5 and k64["active_blocks_per_sm"] == 4 and k64["occupancy_limiter"] == "registers"
    assert k64["est_achieved_occupancy"] == 0.47
    assert k64["waves"] == 2  # 864 blocks / (108 SMs x 4)
    k255 = next(k for k in s["kernels"] if k["name"] == "k255")
    # 255 regs -> 8160 -> 8192 per warp -> 8 warps per SM -> 1 block of 8 warps -> 12.5 %
    assert k255["occupancy"] == 0.125 and k255["waves"] == 4


def test_roofline_position_and_waves():
    peaks = roofline.lookup_peaks("NVIDIA H200")[0]
    pos = roofline.position(flops=1e9, bytes_moved=1e9, duration_us=1000, peaks=peaks)
    assert pos["bound"] == "memory" and pos["arithmetic_intensity"] == 1.0
    assert pos["roofline_pct"] == pytest.approx(100 * 1e12 / (1.0 * 4.8e12), rel=1e-3)
    assert roofline.waves(109, 108, 1) == 2 and roofline.waves(None, 108, 1) is None
    assert roofline.lookup_peaks("some CPU")[0] is None


def test_overlap_between_streams_is_measured():
    b = TraceBuilder()
    b.kernel("a", dur=100, stream=7, start=5000)
    b.kernel("b", dur=100, stream=9, start=5050)
    s = trace.summarize(b.build())
    assert s["multi_stream_overlap_us"] == 50.0
    assert s["gpu_busy_us"] == 150.0
    assert s["streams"] == 2


def test_cpu_only_trace_has_operators_self_time_and_memory():
    b = TraceBuilder(props=None, gpu=False)
    b.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
                     "args": {"Input type": ["c10::BFloat16"]}})
    b.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 10, "dur": 70,
                     "args": {"Input type": ["c10::BFloat16"]}})
    b.memory(1000, device_type=0).memory(5000, device_type=0)
    s = trace.summarize(b.build())
    ops = {o["name"]: o for o in s["operators"]}
    assert ops["aten::linear"]["self_us"] == 30.0 and ops["aten::linear"]["total_us"] == 100.0
    assert ops["aten::addmm"]["self_us"] == 70.0 and ops["aten::addmm"]["dtype"] == "bf16"
    assert s["kernels"] == [] and s["gpu_idle_us"] is None and s["device_name"] is None
    assert s["peak_memory_bytes"] == 5000 and s["precision_us"] == {"bf16": 100.0}


def test_kernel_dtype_from_names():
    assert kernel_dtype("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n") == "bf16"
    assert kernel_dtype("ampere_fp16_s16816gemm_fp16_128x128") == "fp16"
    assert kernel_dtype("void at::native::vectorized_elementwise_kernel<4, "
                        "at::native::CUDAFunctor_add<float>>") == "fp32"
    assert kernel_dtype("triton_poi_fused_add_0") is None
    # fp4 (e2m1: MXFP4, NVFP4 "ue4m3xe2m1") wins over the fp8/bf16 operand it is paired with
    assert kernel_dtype(
        "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1") == "fp4"
    assert kernel_dtype("bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2") == "fp4"
    assert kernel_dtype("cutlass_nvfp4_gemm_ue4m3xe2m1_128x128") == "fp4"
    assert kernel_dtype("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1") == "fp4"
    assert kernel_dtype("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n") == "fp8"
    assert kernel_dtype("void scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e5m2>") == "fp8"
    assert kernel_dtype("mxfp6_gemm_e3m2") == "fp6"
    assert kernel_dtype("sm90_xmma_gemm_f64f64_f64f64_f64_nn") == "fp64"  # fp64 is not fp6
    # ROCm hipBLASLt/Tensile: the first type code after the layout is the input type
    assert kernel_dtype("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256") == "bf16"
    assert kernel_dtype("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32") == "fp16"
    assert kernel_dtype("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32") == "fp32"
    assert kernel_dtype("Cijk_Ailk_Bjlk_F8NH_HHS_BH_MT256x256x64") == "fp8"
    # vLLM's (vllm::Fp8KVCacheDataType)0 is "auto": the cache keeps the model dtype
    assert kernel_dtype("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, "
                        "(vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*)") == "bf16"
    assert kernel_dtype("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
                        "(vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*)") == "fp8"


def test_compact_keeps_top_kernels_and_counts_the_rest():
    b = TraceBuilder()
    for i in range(40):
        b.kernel(f"kernel_{i:02d}" + "x" * 400, dur=float(i + 1))
    s = trace.summarize(b.build())
    c = trace.compact(s, top=5)
    assert len(c["kernels"]) == 5
    assert c["kernels"][0]["total_us"] == 40.0
    assert c["kernels_omitted"] == {"count": 35, "total_us": float(sum(range(1, 36)))}
    assert all(len(k["name"]) <= 300 for k in c["kernels"])
    assert len(json.dumps(c)) < len(json.dumps(s))


def test_load_trace_reads_gz_and_json_and_bare_lists(tmp_path):
    doc = _gpu_trace()
    assert kineto.load_trace(write(doc, tmp_path / "t.json.gz"))["traceEvents"]
    assert kineto.load_trace(write(doc, tmp_path / "t.json"))["traceEvents"]
    (tmp_path / "list.json").write_text(json.dumps(doc["traceEvents"]))
    assert trace.summarize(kineto.load_trace(tmp_path / "list.json"))["iterations"] == 4


@pytest.mark.parametrize("content, message", [
    (None, "cannot read trace"),
    (b"not json at all", "is not a JSON trace"),
    (gzip.compress(b"{broken"), "is not a JSON trace"),
    (b"\x1f\x8b\x08garbage", "is not a JSON trace"),
    (b'{"a": 1}', "not a Kineto/Chrome trace"),
])
def test_load_trace_errors_are_user_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message):
        kineto.load_trace(path)


def test_cli_trace_summary_json_and_table(tmp_path, capsys):
    path = write(_gpu_trace(), tmp_path / "t.json.gz")
    assert main(["trace-summary", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runtime"]["sync"]["cudaStreamSynchronize"]["count"] == 4
    assert main(["trace-summary", str(path)]) == 0
    table = capsys.readouterr().out
    assert "kernels (by total time)" in table and "cudaStreamSynchronize" in table


def test_cli_bad_file_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("nope")
    assert main(["trace-summary", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("perfgate: error:") and "Traceback" not in err[0]
    assert main(["trace-diff", str(bad), str(tmp_path / "missing.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


H100_PROPS = {"warpSize": 32, "maxThreadsPerMultiprocessor": 2048, "regsPerMultiprocessor": 65536,
              "regsPerBlock": 65536, "sharedMemPerMultiprocessor": 233472, "computeMajor": 9,
              "computeMinor": 0, "maxBlocksPerMultiProcessor": 32}


def _calculator(regs: int, threads: int) -> int:
    """cuda_occupancy.h's cudaOccMaxBlocksPerSMRegsLimit for sm_90, written out from the header
    independently of perfgate's code, with the warp and block limits beside it."""
    warps = -(-threads // 32)
    per_warp = -(-regs * 32 // 256) * 256
    if 65536 < per_warp * (-(-warps // 4) * 4) or regs > 255:
        by_regs = 0
    else:
        by_regs = (16384 // per_warp * 4) // warps
    return min(32, 64 // warps, by_regs)


def test_occupancy_allocates_registers_per_sub_partition_as_the_calculator_does():
    # GPU review #17 (demo D4): 51 of 300 configs on sm_90 got one block too many
    configs = [(r, t) for r in range(16, 256, 8)
               for t in (32, 64, 96, 128, 160, 192, 256, 384, 512, 1024)]
    differ = [(r, t) for r, t in configs
              if roofline.active_blocks_per_sm(r, t, 0, H100_PROPS)[0] != _calculator(r, t)]
    assert len(configs) == 300 and differ == []
    assert roofline.active_blocks_per_sm(40, 64, 0, H100_PROPS) == (24, "registers")
    # a block whose registers exceed regsPerBlock does not launch at all
    assert roofline.active_blocks_per_sm(255, 1024, 0, H100_PROPS)[0] == 0


def test_the_traces_own_occupancy_calculator_is_preferred_where_kineto_writes_it():
    b = TraceBuilder()
    b.kernel("k", regs=64, block=(256, 1, 1), grid=(864, 1, 1),
             occupancy={"activeBlocksPerMultiprocessor": 3, "limitingFactors": 2,
                        "blockLimitRegs": 3, "blockLimitSharedMem": 7, "blockLimitWarps": 8,
                        "blockLimitBlocks": 32})
    k = trace.summarize(b.build())["kernels"][0]
    assert k["active_blocks_per_sm"] == 3 and k["occupancy_limiter"] == "registers"
    assert k["occupancy"] == 0.375  # 3 blocks x 8 warps x 32 threads / 2048


def _doubled_gemm(mms: int) -> dict:
    """GPU review demo D3 in the worker's trace format: five profiled calls, each `mms` SGEMMs of
    400 µs on an H100, then the worker's own cudaDeviceSynchronize inside perfgate::sync."""
    h100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
            "numSms": 132, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
            "regsPerBlock": 65536, "warpSize": 32, "regsPerMultiprocessor": 65536,
            "sharedMemPerMultiprocessor": 233472, "totalGlobalMem": 85029158912}
    b = TraceBuilder(props=h100)
    for _ in range(5):
        b.step()
        for _ in range(mms):
            b.op("aten::mm", dims=[[2048, 2048], [2048, 2048]], input_types=("float", "float"))
            b.kernel("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", dur=400.0, regs=168,
                     grid=(16, 16, 1), block=(128, 1, 1), smem=65536)
        b.harness_sync()
    return b.build()


def test_doubled_gpu_work_is_named_as_kernel_time_not_perfgates_own_synchronisation():
    from runner.hints.evidence import hints_for

    base, head = trace.summarize(_doubled_gemm(1)), trace.summarize(_doubled_gemm(2))
    # the worker's own wait is not the benchmark's: no synchronisation counted on either side
    assert all(c["count"] == 0 for c in head["runtime"]["sync"].values())
    found = hints_for({"ratio": 2.0, "ci_low": 1.9, "ci_high": 2.1, "p_value": 1e-6,
                       "verdict": "regression"}, base, head)
    assert ([h["kind"] for h in found][:1] == ["kernel_time"]
            and "runs 1 → 2 times per call" in found[0]["summary"])
    assert "sync_overhead" not in [h["kind"] for h in found]
