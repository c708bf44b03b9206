"""`perfgate run` (one revision) and `perfgate demo` (the README's main command), for real."""

from __future__ import annotations

import json

import pytest

from runner.cli.main import main
from testkit.gitrepo import make_repo

from .gitrepo import LIB_BASE, LIB_HEAD

pytestmark = pytest.mark.slow


def test_run_measures_one_revision_with_median_intervals(tmp_path):
    repo = make_repo(tmp_path / "repo", LIB_BASE, LIB_HEAD)
    out = tmp_path / "out"
    assert main(["run", "--repo", str(repo), "--rev", "base", "--out", str(out), "--max-time", "8",
                 "--filter", "bench_s*", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["base"] is None and doc["head"]["ref"] == "base"
    by = {b["name"]: b for b in doc["benchmarks"]}
    assert set(by) == {"bench_slow", "bench_same"}
    side = by["bench_slow"]["head"]
    assert len(side["samples"]) >= 2 and side["ci_low"] <= side["median"] <= side["ci_high"]
    assert by["bench_slow"]["change"] is None
    assert (out / "report.md").read_text().startswith("<!-- perfgate -->\n## perfgate run:")


def test_demo_finds_the_regression_and_the_improvement(tmp_path):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    by = {b["name"]: b for b in doc["benchmarks"]}
    assert by["bench_rms_norm[rows=32]"]["change"]["verdict"] == "regression"
    assert by["bench_pairwise_distance"]["change"]["verdict"] == "improvement"
    assert by["bench_softmax"]["change"]["verdict"] in ("unchanged", "inconclusive")
    assert doc["intent"]["strategy"] == "algorithm_replacement"
    kinds = [h["kind"] for h in by["bench_rms_norm[rows=32]"]["hints"]]
    assert kinds and "unexplained" not in kinds
    assert (out / "traces" / "head").is_dir()
