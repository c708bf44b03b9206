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
