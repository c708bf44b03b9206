"""evaluation/real_prs.py: the check's verdict and its agreement with perfgate's (pure), the
committed cases are well-formed, and the whole study runs on generated cases (its --smoke)."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "evaluation" / "real_prs.py"
spec = importlib.util.spec_from_file_location("real_prs", SCRIPT)
real_prs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real_prs)


@pytest.mark.parametrize("interval, expected", [
    ((1.0, 0.99, 1.01), "same"),           # within ±2 %
    ((0.5, 0.45, 0.55), "faster"),
    ((3.0, 2.5, 3.5), "slower"),
    ((1.01, 1.005, 1.03), "slower"),       # beyond the band on one side, excludes 1
    ((1.0, 0.95, 1.06), "unclear"),        # wide and straddling 1
    ((0.985, 0.97, 0.99), "faster"),       # 1/1.02 = 0.9804 > 0.97: not within the band
])
def test_the_checks_verdict_follows_perfgates_rule(interval, expected):
    assert real_prs.check_verdict(*interval) == expected


@pytest.mark.parametrize("verdict, check, expected", [
    ("improvement", "faster", "agree"), ("regression", "slower", "agree"), ("unchanged", "same", "agree"),
    ("improvement", "slower", "wrong direction"), ("regression", "faster", "wrong direction"),
    ("inconclusive", "faster", "undecided"), ("improvement", "unclear", "unconfirmed"),
    ("unchanged", "faster", "disagree"), ("improvement", "same", "disagree"),
    (None, "faster", "error"), ("unchanged", None, "error"),
])
def test_agreement_between_perfgate_and_the_check(verdict, check, expected):
    assert real_prs.agreement(verdict, check) == expected


def test_the_process_estimate_is_the_ratio_of_medians_with_an_interval_around_it():
    base = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03]
    head = [0.50, 0.51, 0.49, 0.52, 0.50, 0.48]
    est = real_prs.process_estimate(base, head)
    assert est["ratio"] == pytest.approx(0.5 / 1.005)
    assert est["ci_low"] < est["ratio"] < est["ci_high"] and est["ci_high"] < 0.6


def test_a_malformed_case_is_refused_with_the_field_named(tmp_path):
    (tmp_path / "case.toml").write_text('repo = "a/b"\npr = 1\ntitle = "t"\nclaim = "c"\nkind = "perf"\n'
                                        'base = "abc"\nhead = "abc"\npackage = "b"\n')
    (tmp_path / "bench_x.py").write_text("")
    with pytest.raises(ValueError, match="base 'abc' is not a full 40-hex SHA"):
        real_prs.load_case(tmp_path)
    (tmp_path / "case.toml").write_text('repo = "a/b"\n')
    with pytest.raises(ValueError, match="missing pr, title"):
        real_prs.load_case(tmp_path)


def test_every_committed_case_is_well_formed():
    folders = [d for d in real_prs.CASES.iterdir() if d.is_dir()]
    assert folders, "no cases committed"
    kinds = []
    for folder in folders:
        case = real_prs.load_case(folder)
        kinds.append(case["kind"])
        assert case["base"] != case["head"] and case["url"].startswith("https://github.com/" + case["repo"])
        tree = ast.parse((folder / f"{case['module']}.py").read_text())
        benches = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("bench_")]
        assert len(benches) == 1, (folder, benches)
    assert kinds.count("control") >= 3 and kinds.count("perf") >= 20


@pytest.mark.slow
def test_the_study_runs_end_to_end_on_generated_cases(tmp_path):
    raw = tmp_path / "rows.json"
    assert real_prs.main(["--smoke", "--write", str(tmp_path / "R.md"), "--json", str(raw)]) == 0
    doc = json.loads(raw.read_text())
    rows = {r["id"]: r for r in doc["rows"]}
    # sum() is about 4x faster than the loop: the long check sees it, perfgate never says otherwise
    assert rows["tinylib_1"]["check"]["verdict"] == "faster"
    assert rows["tinylib_1"]["perfgate"]["verdict"] in ("improvement", "inconclusive")
    # the control is never a verdict
    assert rows["tinylib_2"]["perfgate"]["verdict"] in ("unchanged", "inconclusive")
    assert doc["summary"]["wrong_direction"] == 0 and doc["summary"]["control_false"] == 0
    assert "| tinylib_1 |" in (tmp_path / "R.md").read_text()


def test_intervals_that_do_not_overlap_are_told_apart_from_an_agreement_in_magnitude():
    perfgate = {"ci_low": 0.27, "ci_high": 0.6}
    assert real_prs.overlap(perfgate, {"ci_low": 8.8e-5, "ci_high": 9.6e-5}) is False
    assert real_prs.overlap(perfgate, {"ci_low": 0.5, "ci_high": 0.7}) is True
    assert real_prs.overlap(perfgate, {"ci_low": None}) is None
