"""evaluation/gpu_acceptance.py: its pure helpers, a failing step reported as such, and the whole
acceptance end to end in ``--dry-run`` (CPU, the fakes), so the script a lent GPU will run first
is proven before it gets there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import gpu_acceptance as acc

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_tests_are_found_by_their_mark():
    files = acc.gpu_test_files()
    assert "tests/runner/test_gpu.py" in files and "tests/trace/test_scenarios_gpu.py" in files
    assert "tests/runner/test_gpu_acceptance.py" not in files


def test_junit_counts(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite tests="4" failures="1" errors="0" skipped="1">'
                   '<testcase classname="t" name="a"/><testcase classname="t" name="b"><failure/></testcase>'
                   '<testcase classname="t" name="c"><skipped/></testcase><testcase classname="t" name="d"/>'
                   '</testsuite></testsuites>')
    assert acc.junit_counts(xml) == {"tests": 4, "failures": 1, "errors": 0, "skipped": 1, "passed": 2,
                                     "failed_names": ["t.b"]}


def test_the_generated_suites_hold_what_they_say():
    aa = acc.aa_suite([8, 16])
    namespace: dict = {}
    exec(compile(aa, "bench_gpu.py", "exec"), namespace)  # noqa: S102 - our own generated source
    assert sorted(k for k in namespace if k.startswith("bench_")) == sorted(
        f"bench_{kind}_{n}" for kind in acc.AA_KINDS for n in (8, 16))
    base, head = acc.injected_suite(100, 100, {"1pct": 0}), acc.injected_suite(100, 100, {"1pct": 1})
    assert base != head and base.replace("{'1pct': 0}", "{'1pct': 1}") == head


def test_a_failing_step_is_named_and_the_exit_status_is_one(tmp_path, monkeypatch):
    def broken(ctx):
        raise RuntimeError("no device")

    monkeypatch.setattr(acc, "STEPS", [("scenarios", acc.step_scenarios), ("overhead", broken)])
    assert acc.main(["--dry-run", "--out", str(tmp_path)]) == 1
    doc = json.loads((tmp_path / "acceptance.json").read_text())
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [("scenarios", "pass"), ("overhead", "fail")]
    assert "RuntimeError: no device" in doc["steps"][1]["summary"]
    assert "What failed: overhead (RuntimeError: no device)" in (tmp_path / "acceptance.md").read_text()


@pytest.mark.slow
def test_the_whole_acceptance_runs_in_a_dry_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "evaluation.gpu_acceptance", "--dry-run", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "acceptance.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    assert list(steps) == [name for name, _ in acc.STEPS] and doc["failed"] == 0
    assert steps["gpu_tests"]["figures"]["tests"] >= 6  # collected and skipped here, none failed
    assert [r["first_hint"] for r in steps["scenarios"]["figures"]["rows"]] == \
        [r["scenario"] for r in steps["scenarios"]["figures"]["rows"]]
    assert steps["aa"]["figures"]["benchmarks"] == len(acc.AA_KINDS)  # one size in the dry run
    assert set(steps["injected"]["figures"]["rows"]) == {"5pct", "50pct"}
    # the simulated device: a 5 µs kernel reads 5 µs with the cold cache too (no host round trip inside)
    assert steps["overhead"]["figures"]["kernel_cold_us"] == pytest.approx(5.0, abs=0.5)
    assert steps["clocks"]["figures"]["record"]["restored"] is True
    text = (tmp_path / "acceptance.md").read_text()
    assert "| scenarios | PASS |" in text and "What failed: nothing." in text


def test_the_aa_gate_fails_on_what_it_exists_to_catch():
    # GPU review #13: 12 of 12 inconclusive passed; a gate is tested by injecting its failure
    assert acc.aa_gate(["unchanged"] * 6, 6) == (True, "")
    assert acc.aa_gate(["inconclusive"] * 12, 6)[0] is False
    assert "false verdict" in acc.aa_gate(["unchanged"] * 5 + ["regression"], 6)[1]
    assert "unchanged" in acc.aa_gate(["unchanged"] * 4 + ["inconclusive"] * 2, 6)[1]  # 67 %
    assert acc.aa_gate(["unchanged"] * 5 + ["inconclusive"], 6)[0] is True  # 83 %
    assert "needed" in acc.aa_gate(["unchanged"] * 3, 6)[1]
