"""examples/scenarios on a real GPU: each head must produce its root cause as the first hint.

Run on a CUDA machine with ``pytest -m gpu tests/trace/test_scenarios_gpu.py -s`` (the figures
are printed); skipped without CUDA.
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
