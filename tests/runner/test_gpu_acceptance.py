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


#: A stand-in for the step's process that dies on the overhead step as a GPU without a driver
#: would, and runs every other step for real (what STEP_COMMAND starts, with the step's arguments).
DIES_ON_OVERHEAD = ("import runpy, sys\n"
                    "if 'overhead' in sys.argv:\n"
                    "    sys.exit('RuntimeError: no device')\n"
                    "sys.argv = ['gpu_acceptance', *sys.argv[1:]]\n"
                    "runpy.run_module('evaluation.gpu_acceptance', run_name='__main__')\n")


def test_a_failing_step_is_named_and_the_exit_status_is_one(tmp_path, monkeypatch):
    monkeypatch.setattr(acc, "STEPS", [("scenarios", acc.step_scenarios),
                                       ("overhead", acc.step_overhead)])
    monkeypatch.setattr(acc, "STEP_COMMAND", [sys.executable, "-c", DIES_ON_OVERHEAD])
    assert acc.main(["--dry-run", "--out", str(tmp_path)]) == 1
    doc = json.loads((tmp_path / "acceptance.json").read_text())
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [("scenarios", "pass"), ("overhead", "fail")]
    assert "RuntimeError: no device" in doc["steps"][1]["summary"]
    assert "What failed: overhead (" in (tmp_path / "acceptance.md").read_text()


def test_a_step_that_raises_is_a_failed_step_with_its_reason(tmp_path):
    def broken(ctx):
        raise RuntimeError("no device")

    step = acc.run_step("overhead", broken, acc.Context(dry_run=True, out=tmp_path))
    assert (step.name, step.status, step.summary) == ("overhead", "fail", "RuntimeError: no device")


def test_every_step_runs_in_a_process_of_its_own_and_the_acceptance_holds_no_gpu(tmp_path):
    # GPU review #24: the acceptance's own CUDA context sat on the GPU during the aa/injected
    # compares (their doctor saw a GPU process), and the scenarios' profiler ran in the process
    # that then measured the overhead (CUPTI can stay active after profiling)
    proc = subprocess.run([sys.executable, "-m", "evaluation.gpu_acceptance", "--dry-run",
                           "--out", str(tmp_path), "--only", "environment", "--only", "clocks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "acceptance.json").read_text())
    pids = [s["pid"] for s in doc["steps"]]
    assert len(set(pids)) == 2 and doc["pid"] not in pids
    assert doc["imported_torch"] is False  # no torch here, so no CUDA context of the acceptance's


def test_a_lock_is_read_back_while_the_gpu_works_and_holds_within_two_percent():
    order: list[str] = []
    readings = iter([1980, 1975, 1979])
    got = acc.clocks_during_load(lambda: order.append("enqueue"), lambda: order.append("wait"),
                                 lambda: order.append("read") or next(readings), reads=3)
    assert got == [1980, 1975, 1979]
    assert order == ["enqueue", "read", "read", "read", "wait"]  # read while the GEMMs are queued
    assert acc.lock_holds([1980, 1975, 1979], 1980) == (True, "")
    held, why = acc.lock_holds([1980, 1890, 1979], 1980)  # a lock the load pulls down 4.5 %
    assert held is False and "1890" in why
    assert acc.lock_holds([], 1980)[0] is False and acc.lock_holds([None], 1980)[0] is False


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
    # every step in a process of its own, the acceptance's none
    assert len({s["pid"] for s in steps.values()} | {doc["pid"]}) == len(steps) + 1
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


def test_the_overhead_gate_fails_on_what_it_exists_to_catch():
    # GPU review #14: an empty callable's 0.05 µs always passed; the gate is a GPU-bound kernel's
    # warm time against its device time, cold against do_bench's
    good = {"warm_us": 50.4, "reference_us": 50.0, "cold_us": 50.9, "do_bench_us": 50.0}
    assert acc.overhead_gate(good) == (True, "")
    assert acc.overhead_gate({**good, "do_bench_us": None}) == (True, "")  # no Triton: not checked
    # a host round trip per call (+1.5 µs on 50 µs: 3 %) or a launch-bound reading fails
    assert "warm_us 51.50 µs is ×1.030" in acc.overhead_gate({**good, "warm_us": 51.5})[1]
    assert "cold_us" in acc.overhead_gate({**good, "cold_us": 52.0})[1]  # 4 % off do_bench
    assert acc.overhead_gate({**good, "reference_us": None})[0] is False


def test_the_overhead_step_says_it_was_not_run_without_a_gpu(tmp_path):
    step = acc.step_overhead(acc.Context(dry_run=True, out=tmp_path))
    assert step.status == "skip" and step.summary.startswith("not run: ")
