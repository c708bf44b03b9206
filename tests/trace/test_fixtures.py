"""The real Kineto traces in tests/fixtures/traces (sources in its SOURCES.md): CUDA, ROCm, old
Kineto formats, torch.compile, CUDA/HIP graphs, collectives, known export defects."""

from __future__ import annotations

import copy
import functools
import json
import re

import pytest

from runner.hints import evidence as hints

from runner.profile import summaries as trace
from runner.cli.main import main
from runner.profile import diff as profile_diff, kineto
from tests.conftest import TRACES

IMPROVEMENT = {"ratio": 0.7, "ci_low": 0.65, "ci_high": 0.75, "p_value": 0.001, "verdict": "improvement"}


@functools.lru_cache(maxsize=None)
def _summary(name):
    return trace.summarize(kineto.load_trace(TRACES / name))


def _files():
    files = sorted(p for p in TRACES.iterdir() if p.name.endswith((".json", ".json.gz")))
    assert len(files) >= 25, "traces missing from tests/fixtures/traces"
    return files


def test_every_trace_is_listed_with_its_source():
    sources = (TRACES / "SOURCES.md").read_text()
    for path in _files():
        assert f"`{path.name}`" in sources, path.name
    for name in re.findall(r"^\| `([^`]+\.json(?:\.gz)?)`", sources, re.M):
        assert (TRACES / name).is_file(), name


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name[:40])
def test_every_trace_summarises_with_defined_numbers(path):
    s = _summary(path.name)
    c = trace.compact(s)
    json.dumps(c)
    assert len(c["kernels"]) <= 25 and len(c["operators"]) <= 25
    assert s["span_us"] >= 0 and s["device"]["label"]
    rt = s["runtime"]
    for kind, v in rt["calls_by_kind"].items():
        assert v["count"] >= 0 and v["total_us"] >= 0, kind
    assert rt["launches"]["count"] == rt["calls_by_kind"]["launch"]["count"] + rt["graph_launches"]
    if s["kernels"]:
        # a trace with GPU activity has every GPU number, and busy + idle is the profiled span
        assert s["device"]["kind"] == "gpu" and s["gpu_busy_us"] > 0 and s["gpu_idle_us"] is not None
        assert s["gpu_busy_us"] + s["gpu_idle_us"] == pytest.approx(s["span_us"], abs=0.01)
        assert s["kernel_totals"]["count"] == sum(k["count"] for k in s["kernels"])
        assert rt["launches"]["count"] > 0 and rt["launch_delay_mean_us"] is not None
        assert s["device"]["peaks"] is not None or s["device"]["peaks_note"].startswith("no peaks known")


# ---- one test per row of the issue's table ---------------------------------------------------

def test_rocm_launches_and_syncs_are_counted_like_cuda():
    h, m = _summary("h100_bert-small.json.gz"), _summary("mi300_bert-small.json.gz")
    assert (h["runtime"]["api"], m["runtime"]["api"]) == ("cuda", "hip")
    assert h["runtime"]["launches"]["count"] == m["runtime"]["launches"]["count"] == 60
    assert h["kernel_totals"]["count"] == m["kernel_totals"]["count"] == 60
    assert h["runtime"]["sync"]["cudaDeviceSynchronize"]["count"] == 2
    assert m["runtime"]["sync"]["hipDeviceSynchronize"]["count"] == 2
    # torch's .item() copy: cudaMemcpyAsync + cudaStreamSynchronize on CUDA, hipMemcpyWithStream on ROCm
    assert h["runtime"]["sync"]["cudaStreamSynchronize"]["count"] == 1
    assert m["runtime"]["sync"]["hipMemcpyWithStream"]["count"] == 1
    assert profile_diff._sync_count(h) == profile_diff._sync_count(m) == 3
    assert m["device"]["peaks"]["model"] == "AMD Instinct MI300X"  # "MI300X VF": the SR-IOV function of one


@pytest.mark.parametrize("order", ["mi300_then_h100", "h100_then_mi300"])
def test_mi300x_vs_h100_names_the_device_change_and_no_launch_or_sync_cause(order):
    h, m = _summary("h100_bert-small.json.gz"), _summary("mi300_bert-small.json.gz")
    base, head = (m, h) if order == "mi300_then_h100" else (h, m)
    found = hints.hints_for(None, base, head)
    assert found[0]["kind"] == "device_change"
    assert "AMD Instinct MI300X VF" in found[0]["summary"] and "NVIDIA H100 80GB HBM3" in found[0]["summary"]
    assert found[0]["evidence"]["vendor"] == ({"base": "AMD", "head": "NVIDIA"} if order == "mi300_then_h100"
                                              else {"base": "NVIDIA", "head": "AMD"})
    assert not {"launch_overhead", "sync_overhead"} & {x["kind"] for x in found}
    d = profile_diff.diff(base, head)
    assert d["totals"]["launches"]["delta"] == 0 and d["totals"]["sync_count"]["delta"] == 0


def test_unnamed_gpu_is_a_gpu_and_graph_launches_count(capsys):
    s = _summary("vllm_rocm_graph_execution.json.gz")
    assert s["device"]["kind"] == "gpu" and s["device_name"] is None
    assert s["device"]["label"] == "GPU, no name in trace, 304 CUs"
    assert s["runtime"]["graph_launches"] == 1 and s["kernel_totals"]["count"] == 425
    # launch delay: the mean over the 5 launch calls, each to its first kernel (the graph's 421
    # kernels count once); the GPU queue is milliseconds behind the host in this decode step
    assert s["runtime"]["launch_delay_mean_us"] == pytest.approx((7284.163 + 6378.308 + 16718.742 + 16697.081
                                                                  + 16529.073) / 5, abs=0.01)
    # named from its properties: gfx 9.4, 304 CUs, 192 GiB is an MI300X and nothing else
    assert s["device"]["peaks"]["model"] == "AMD Instinct MI300X"
    assert "deviceProperties" in s["device"]["peaks"]["method"]
    assert main(["trace-summary", str(TRACES / "vllm_rocm_graph_execution.json.gz")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "device: GPU, no name in trace, 304 CUs" in out and "CPU only" not in out and "HIP runtime" in out


def test_cuda_graph_launches_count_too():
    s = _summary("hta_trace_diff_test_step1010.json.gz")
    assert s["runtime"]["graph_launches"] == 2 and s["runtime"]["calls"]["cudaGraphLaunch"]["count"] == 2
    assert s["kernel_totals"]["count"] > s["runtime"]["launches"]["count"]  # graphs replay many kernels


def test_pytorch_1_8_categories_give_the_same_summary_as_todays():
    old, new = _summary("pytorch18_small.json"), _summary("pytorch18_small_new_names.json")
    assert old == new
    assert old["kernel_totals"] == {"count": 1, "total_us": 15.0, "small_count": 0, "small_us": 0.0}
    assert old["runtime"]["launches"]["count"] == 1
    assert old["runtime"]["memcpy"] == {"HtoD": {"count": 1, "bytes": 0, "total_us": 10.0, "pageable_count": 1}}
    assert old["runtime"]["memset"]["count"] == 1 and old["runtime"]["memset"]["total_us"] == 5.0
    assert (old["gpu_busy_us"], old["gpu_idle_us"], old["span_us"]) == (30.0, 370.0, 400.0)
    assert old["iterations"] == 1 and {o["name"] for o in old["operators"]} >= {"aten::to", "aten::nll_loss_backward"}
    assert hints.hints_for(None, old, new) == []


def test_trace_diff_json_of_old_and_new_format_has_comparable_numbers(capsys):
    assert main(["trace-diff", str(TRACES / "pytorch18_small.json"), str(TRACES / "pytorch18_small_new_names.json"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    idle = out["diff"]["totals"]["gpu_idle_us"]
    assert idle == {"base": 370.0, "head": 370.0, "delta": 0.0} and out["hints"] == []


def test_kineto_2021_trace_without_device_properties():
    s = _summary("kineto_resnet50_old_step6.json.gz")
    assert s["device"] == {**s["device"], "kind": "gpu", "name": None, "label": "GPU, no name in trace"}
    assert s["iterations"] == 1 and s["kernel_totals"]["count"] == 1476 == s["runtime"]["launches"]["count"]
    assert s["gpu_busy_us"] == pytest.approx(103081.0) and s["gpu_idle_us"] == pytest.approx(62527.0)
    assert s["runtime"]["memset"]["count"] > 0 and s["runtime"]["sync"]["cudaStreamSynchronize"]["count"] == 2
    assert s["device"]["peaks_note"] == "no peaks known: the trace names no GPU and has no device properties"
    # old traces spell "external id" in lower case on GPU events: kernels still join their operators
    assert any(k["dtype"] == "fp32" for k in s["kernels"]) and s["operators"]


def test_compute_properties_is_read_as_device_properties():
    s = _summary("gpu_metrics_input.json.gz")
    assert s["device_name"] == "Tesla V100-DGXS-32GB"
    assert s["device_properties"]["numSms"] == 80 and s["device_properties"]["computeMajor"] == 7
    assert s["device_properties"]["maxThreadsPerMultiprocessor"] == 2048
    k = next(k for k in s["kernels"] if k["registers_per_thread"])
    assert 0 < k["occupancy"] <= 1 and k["waves"]
    assert s["device"]["peaks"]["model"] == "NVIDIA V100 SXM2"  # DGX Station: SXM2 boards
    assert s["gpu_busy_us"] == 50.0 and s["runtime"]["launches"]["count"] == 30


def test_fp4_and_fp8_gemms_of_b200_are_classed_by_their_names():
    s = _summary("b200_eager_trace.json.gz")
    dtypes = {k["name"]: k["dtype"] for k in s["kernels"]}
    assert dtypes[next(n for n in dtypes if n.startswith("bmm_MxE4m3_MxE2m1"))] == "fp4"
    assert dtypes[next(n for n in dtypes if n.startswith("bmm_Bfloat16_MxE2m1"))] == "fp4"
    assert dtypes[next(n for n in dtypes if n.startswith("fmhaSm100aKernel_QkvE4m3"))] == "fp8"
    assert max(s["precision_us"], key=s["precision_us"].get) == "fp4"
    assert s["precision_us"]["fp4"] == pytest.approx(5214.837, abs=0.01)
    assert s["device"]["peaks"]["fp4_flops"] == 9000e12


def test_precision_change_fires_for_fp8_to_fp4():
    head_doc = kineto.load_trace(TRACES / "b200_eager_trace.json.gz")
    base_doc = copy.deepcopy(head_doc)
    for e in base_doc["traceEvents"]:  # the same model with MXFP8 weights: what an fp8 → fp4 PR changes
        if e.get("cat") == "kernel":
            e["name"] = e["name"].replace("E2m1", "E4m3")
    base, head = trace.summarize(base_doc), trace.summarize(head_doc)
    assert max(base["precision_us"], key=base["precision_us"].get) == "fp8"
    found = hints.hints_for(IMPROVEMENT, base, head)
    change = next(h for h in found if h["kind"] == "precision_change")
    assert "fp4 0 % → 66 %" in change["summary"] and "fp8 75 % → 9 %" in change["summary"]
    assert change["evidence"]["share"]["head"]["fp4"] == pytest.approx(5214.837 / 7916.333, abs=0.001)


def test_collectives_are_communication_not_precision():
    s = _summary("hta_trace_filter_sampled_rank-1.json.gz")
    nccl = [k for k in s["kernels"] if k["name"].startswith("ncclKernel_SendRecv")]
    assert nccl and all(k["collective"] and k["dtype"] is None for k in nccl)
    assert "int8" not in s["precision_us"]  # "…_Sum_int8" is the bytes sent, not int8 compute
    assert s["communication"]["count"] == sum(k["count"] for k in nccl) == 10
    assert set(s["communication"]["streams"]) == {84, 203}
    assert s["device"]["label"] == "GPU, no name in trace"
    b200 = _summary("b200_eager_trace.json.gz")
    collectives = [k["name"] for k in b200["kernels"] if k["collective"]]
    assert len(collectives) == 2 and b200["communication"]["count"] == 74
    assert any(n.startswith("ncclDevKernel_AllGather_RING_LL") for n in collectives)
    assert any(n.startswith("void (anonymous namespace)::multimem_all_reduce_kernel") for n in collectives)


def test_l40_is_not_an_l4_and_unknown_gpus_say_so():
    from runner.profile import roofline

    l40 = roofline.lookup_peaks("NVIDIA L40")[0]
    assert l40["model"] == "NVIDIA L40" and l40["bandwidth_bytes_per_s"] == 864e9
    assert roofline.lookup_peaks("NVIDIA L4")[0]["bandwidth_bytes_per_s"] == 300e9
    assert roofline.lookup_peaks("NVIDIA A10G") == (None, "no peaks known for NVIDIA A10G")
    s = _summary("hta_mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert s["device"]["label"] == "AMD Radeon Graphics" and s["device"]["peaks"] is None
    assert s["device"]["peaks_note"] == ("no peaks known for AMD Radeon Graphics: its properties fit "
                                         "AMD Instinct MI250 (one GCD), AMD Instinct MI210")


@pytest.mark.parametrize("name, issue", [("h100_bert_with_stack_raw_newline.json.gz", "pytorch/pytorch#113001"),
                                         ("h100_bert_with_stack_windows_paths.json.gz", "pytorch/pytorch#98432")])
def test_traces_with_known_torch_export_defects_are_read(name, issue, capsys):
    s = _summary(name)
    assert [r["issue"] for r in s["repaired"]] == [issue]
    clean = _summary("h100_bert-small.json.gz")
    assert {**s, "repaired": []} == clean  # the damage is in a python_function name only
    assert main(["trace-summary", str(TRACES / name)]) == 0
    assert f"known torch export bug ({issue})" in " ".join(capsys.readouterr().out.split())


def test_unrepairable_json_names_the_repair_that_was_tried():
    text = '{"traceEvents": [{"name": "C:\\Users\\me", "cat": "python_function"},]}'
    with pytest.raises(ValueError, match=r"Expecting value .* after repairing unescaped backslashes .*#98432"):
        kineto.parse_trace_json(text)


# ---- more traces of the same kinds -----------------------------------------------------------

def test_torch_compile_triton_kernels_on_rocm():
    s = _summary("tracelens_torch_compile_triton.json.gz")
    triton = [k for k in s["kernels"] if k["name"].startswith("triton_")]
    assert len(triton) == 4 and s["kernel_totals"]["count"] == 12
    assert s["runtime"]["calls"]["hipModuleLaunchKernel"]["count"] == 5  # how Triton launches on ROCm
    assert s["runtime"]["launches"]["count"] == 12
    gemm = next(k for k in s["kernels"] if k["name"].startswith("Cijk_"))
    assert gemm["dtype"] == "bf16"  # hipBLASLt "…_BBS_…": bf16 inputs


def test_hip_graph_and_blocking_copy_of_sglang():
    s = _summary("tracelens_sglang_Qwen3-8B_decode.json.gz")
    assert s["runtime"]["graph_launches"] == 1 and s["kernel_totals"]["count"] == 555
    assert s["runtime"]["sync"]["hipMemcpyWithStream"]["count"] == 1
    assert s["runtime"]["sync"]["hipStreamWaitEvent"]["count"] == 1
    assert s["runtime"]["calls_by_kind"]["sync_copy"]["count"] == 1


def test_cupti_range_profile_has_launches_but_no_gpu_activity():
    s = _summary("hta_cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz")
    assert s["device"]["kind"] == "gpu" and s["device_name"] == "NVIDIA A100-PG509-200"
    assert s["runtime"]["launches"]["count"] == 77 and s["kernel_totals"]["count"] == 0
    assert s["gpu_busy_us"] is None and s["gpu_idle_us"] is None
    other = _summary("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz")
    d = profile_diff.diff(s, other)  # a consumer comparing busy/idle gets None deltas, not a crash
    assert d["totals"]["gpu_busy_us"]["delta"] is None and d["totals"]["gpu_idle_us"]["delta"] is None
    hints.hints_for(None, s, other)
    hints.hints_for(None, other, s)


def test_kineto_2022_runtime_and_kernel_categories():
    s = _summary("hta_trace_file_list_inference_rank_1.json.gz")
    assert s["kernel_totals"]["count"] == 4 == s["runtime"]["launches"]["count"]
    assert s["gpu_busy_us"] > 0 and s["gpu_idle_us"] is not None


def test_rocm_gpu_only_trace_of_a_named_mi210():
    s = _summary("mi210_gpu_only_control.json.gz")
    assert s["device"]["label"] == "AMD Instinct MI210" and s["device"]["peaks"]["model"] == "AMD Instinct MI210"
    assert s["kernel_totals"]["count"] == 562 == s["runtime"]["launches"]["count"]


# ---- traces the earlier tests used -------------------------------------------------------------

def test_alexnet_synchronisations_and_kernels():
    s = _summary("hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz")
    assert s["runtime"]["sync"]["cudaStreamSynchronize"]["count"] == 16
    assert s["runtime"]["sync"]["cudaDeviceSynchronize"]["count"] == 5
    assert s["kernel_totals"]["count"] == 79
    assert s["device_name"].startswith("NVIDIA A100")
    assert s["device"]["peaks"]["model"] == "NVIDIA A100 SXM4 40GB"  # PG509 board, 40 GB
    assert s["runtime"]["cuda_sync"]["Stream Sync"] == 16
    assert s["runtime"]["calls_by_kind"]["alloc"]["count"] == 24 + 15 + 1  # cudaMalloc, cudaFree, cudaHostAlloc
    k = next(k for k in s["kernels"] if k["registers_per_thread"] and k["est_achieved_occupancy"] is not None)
    assert 0 < k["occupancy"] <= 1 and 0 <= k["est_achieved_occupancy"] <= 1


def test_cpu_only_trace_has_operators():
    s = _summary("hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert s["kernels"] == [] and s["gpu_idle_us"] is None and s["device"]["label"] == "CPU only"
    assert s["operators"] and s["operators"][0]["name"] == "aten::empty"


def test_triton_kernel_name_and_occupancy():
    s = _summary("hta_triton_example_triton_example.json.gz")
    [k] = s["kernels"]
    assert k["name"] == "triton_poi_fused_add_cos_sin_0" and k["grid"] == [1, 1, 1] and k["waves"] == 1
    assert s["runtime"]["launches"]["count"] == 1  # cuLaunchKernel, a driver call


def test_trace_compare_pair_diff_names_the_kernels_that_differ():
    base = _summary("hta_trace_compare_base_base.json.gz")
    head = _summary("hta_trace_compare_test_test.json.gz")
    d = profile_diff.diff(base, head)
    changed = [k for k in d["kernels"] if k["delta_us"] != 0 or k["base"]["count"] != k["head"]["count"]]
    assert [k["name"] for k in changed] == [
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3> >"
        "(int, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3>)"]
    assert changed[0]["base"]["count"] == 1.5 and changed[0]["head"]["count"] == 1.0  # per call, 2 steps
    assert {o["name"] for o in d["new_operators"]} == {"All2All_Pooled_Req", "AddmmBackward0", "CatBackward0"}
    assert d["unmatched_base"] == [] and d["unmatched_head"] == []


def test_trace_diff_pair_a100_vs_v100():
    base = _summary("hta_trace_diff_control_step1010.json.gz")
    head = _summary("hta_trace_diff_test_step1010.json.gz")
    d = profile_diff.diff(base, head)
    assert d["unmatched_base"] and d["unmatched_head"]  # cuBLAS picks other GEMM kernels on V100
    assert any(k["match"] == "family" for k in d["kernels"])
    found = hints.hints_for(None, base, head)
    assert found and all(h["kind"] != "unexplained" for h in found)
    assert found[0]["kind"] == "device_change"
    assert any(h["kind"] == "precision_change" for h in found)  # the A100's TF32 GEMMs are gone on V100
    assert all(h["evidence"].get("device_changed") for h in found[1:] if h["kind"] not in ("throttling",))


@pytest.mark.parametrize("base, head", [
    ("hta_cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz", "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
    ("mi300_bert-small.json.gz", "h100_bert-small.json.gz")])
def test_cli_trace_diff_table_and_json_take_missing_numbers(base, head, capsys):
    assert main(["trace-diff", str(TRACES / base), str(TRACES / head)]) == 0
    capsys.readouterr()
    assert main(["trace-diff", str(TRACES / base), str(TRACES / head), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["base"]["device"]["label"] and out["head"]["device"]["label"]
