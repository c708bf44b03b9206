"""evaluation/sensitivity.py runs every study at a toy size (its --smoke), so the script CI never
ran cannot go stale: the real pipeline on generated repositories, every table rendered."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "evaluation" / "sensitivity.py"


def test_every_study_runs_at_a_smoke_size_and_writes_its_tables(tmp_path):
    spec = importlib.util.spec_from_file_location("sensitivity_smoke", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written, raw = tmp_path / "RESULTS.md", tmp_path / "rows.json"
    assert module.main(["--smoke", "--write", str(written), "--json", str(raw)]) == 0
    text = written.read_text()
    for title in ("### A/A (identical", "### A/A′", "### Injected slowdowns", "### Every magnitude", "### Every duration",
                  "### torch operators", "### The budget kept"):
        assert title in text
    rows = json.loads(raw.read_text())
    # the smoke magnitudes (×0.01, ×100) are decided in the right direction
    assert all(r["right"] for r in rows["magnitudes"]), rows["magnitudes"]
    # A/A′: the doubled benchmark is left out of the untouched ones (3 per compare at this size),
    # and none of those is called changed. The doubled one is found or inconclusive, never called
    # unchanged or faster: at this toy budget (20 s) it can stop short of a verdict — once 2.11×
    # [+62 %, …] lost to Benjamini–Hochberg across the 3 benchmarks (q = 0.053); once, on CI
    # (2026-12-07), with fewer than two process pairs and so no interval at all
    assert rows["edit"]["comparisons"] == 2 and rows["edit"]["false"] == 0, rows["edit"]
    assert rows["edit"]["changed"] == 1, rows["edit"]
    assert set(rows["edit"]["changed_verdicts"]) <= {"regression", "inconclusive"}, rows["edit"]
    assert rows["aa"]["comparisons"] == 3 and {r["kind"] for r in rows["durations"]} == {"A/A", "×10"}
