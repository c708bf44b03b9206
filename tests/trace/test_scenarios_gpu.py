"""examples/scenarios: each head must produce its root cause as the first hint — on recorded
traces anywhere (examples/scenarios/recorded.py), and on a real GPU.

Run the GPU tests on a CUDA machine with ``pytest -m gpu tests/trace/test_scenarios_gpu.py -s``
(the figures are printed); they are skipped without CUDA.
"""

from __future__ import annotations

import importlib
import json

import pytest

from examples.scenarios import SCENARIOS


def test_every_scenario_declares_its_expected_hint():
    for name in SCENARIOS:
        mod = importlib.import_module(f"examples.scenarios.{name}")
        assert mod.EXPECTED_HINT == name and callable(mod.base) and callable(mod.head)


#: What each recorded scenario's first hint must cite (examples/scenarios/recorded.py's edits).
RECORDED_EVIDENCE = {
    "register_pressure": lambda ev: ev["registers_per_thread"] == {"base": 88, "head": 168}
    and ev["occupancy"]["head"] < ev["occupancy"]["base"],
    "sync_overhead": lambda ev: ev["sync_count"]["delta"] == 16 and ev["dtoh_pageable_copies"]["delta"] == 16,
    "memory_contention": lambda ev: ev["multi_stream_overlap_us"]["head"] > ev["multi_stream_overlap_us"]["base"]
    and all(k["mean_us"]["head"] > 1.3 * k["mean_us"]["base"] for k in ev["kernels"]),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_scenarios_analysis_on_recorded_traces_ranks_the_root_cause_first(name, tmp_path):
    """The scenario's analysis (examples/scenarios/run.py) without a GPU: each root cause laid onto
    a real H100 trace must come out first, citing the evidence the edit put there."""
    from examples.scenarios.run import recorded_scenario

    result = recorded_scenario(name, str(tmp_path))
    assert result["verdict"] == "regression" and result["hints"][0] == name, result["hints"]
    assert RECORDED_EVIDENCE[name](result["top"]["evidence"]), result["top"]
    assert (tmp_path / "base" / f"{name}.json.gz").exists() and (tmp_path / "head" / f"{name}.json.gz").exists()


def test_the_recorded_base_is_the_real_trace_unchanged_but_for_memory_contention():
    import gzip

    from examples.scenarios import recorded

    with gzip.open(recorded.SOURCE, "rt") as fh:
        real = json.load(fh)
    for name in SCENARIOS:
        base, head = recorded.derive(name)
        assert (base == real) is (name != "memory_contention")  # its base has the side stream's GEMM
        assert head != base and head["deviceProperties"] == real["deviceProperties"]
    with pytest.raises(KeyError):
        recorded.derive("no_such_scenario")


@pytest.mark.parametrize("model", ["NVIDIA H100 SXM5", "NVIDIA H200 SXM"])
@pytest.mark.parametrize("name", ["memory_contention", "register_pressure"])
def test_by_the_reviews_arithmetic_each_head_is_slower_on_an_h100_and_an_h200(name, model):
    """GPU review #4: as first written, memory_contention's head was 2.5x faster on an H100 (its
    base ran a 5 ms FP32 SGEMM beside 1 ms of memory passes) and register_pressure's most likely
    faster too. Each scenario's docstring arithmetic, on the datasheet peaks perfgate's roofline
    uses, must give a head slower than base by a margin, not by the 2 % the GPU test needs."""
    from runner.profile.roofline import GPU_PEAKS

    (peaks,) = [row for row in GPU_PEAKS if row["model"] == model]
    ms = importlib.import_module(f"examples.scenarios.{name}").estimate_ms(peaks)
    assert ms["head"] / ms["base"] >= 1.5, ms


@pytest.mark.slow
def test_register_pressure_s_head_spills_and_base_does_not_on_sm_90(tmp_path):
    """The premise of the arithmetic, with real Triton and ptxas (no GPU): the scenario's own
    kernel in each side's launch configuration, compiled for sm_90."""
    pytest.importorskip("triton")
    from examples.scenarios import register_pressure as scenario
    from runner.kernels.compile import run_jobs
    from runner.kernels.occupancy import occupancy

    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                 "K": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    jobs = [{"id": side, "paths": [], "file": scenario.__file__, "kernel": "matmul_kernel",
             "signature": signature, "aligned": [0, 1, 2, 3, 4, 5],
             "constexprs": {k: c[k] for k in ("BM", "BN", "BK")}, "num_warps": c["num_warps"],
             "num_stages": c["num_stages"], "arch": "sm_90"}
            for side, c in scenario.CONFIGS.items()]
    answers = run_jobs(jobs, tmp_path / "triton", timeout=300)
    base, head = (answers[side] for side in ("base", "head"))
    assert base["ok"] and head["ok"], answers
    assert base["usage"]["stack"] + base["usage"]["local"] == 0
    assert head["usage"]["registers"] == scenario.MAX_REGISTERS
    assert head["usage"]["stack"] + head["usage"]["local"] > 0
    blocks = {side: occupancy("sm_90", a["usage"]["registers"],
                              scenario.CONFIGS[side]["num_warps"] * 32,
                              a["usage"]["shared_static"] + a["shared_dynamic"])["blocks"]
              for side, a in answers.items()}
    warps = {side: blocks[side] * scenario.CONFIGS[side]["num_warps"] for side in blocks}
    assert warps["head"] < warps["base"], (blocks, warps)  # occupancy falls


@pytest.mark.gpu
@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_top_hint_on_gpu(name, tmp_path):
    from examples.scenarios.run import run_scenario

    mod = importlib.import_module(f"examples.scenarios.{name}")
    if not mod.available():
        pytest.skip(f"{name}: a dependency (e.g. triton) is missing")
    result = run_scenario(name, str(tmp_path))
    print(json.dumps(result, default=str))
    assert result["ratio"] > 1.02, f"head is not slower: {result}"
    assert result["hints"] and result["hints"][0] == mod.EXPECTED_HINT, result
