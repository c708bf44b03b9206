"""``perfgate doctor``: pure checks over literal facts, the gatherer with NVML absent (this
machine) and with a fake NVML, the CLI, and the record in results.json with the report's warning."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from runner import report

from runner.pipeline.machine import doctor, machine_facts
from runner.pipeline.machine.finding import STATUSES, Finding, summarize
from runner.cli.main import main
from runner.results import validation_errors
from testkit.fake_nvml import BOOSTING_H100, HEALTHY_H100, FakeNVML

TORCH_CU126 = {"version": "2.13.0+cu126", "cuda": "12.6", "hip": None}
TUNED_HOST = {"cpu_governor": "performance", "cpu_turbo": False, "smt_active": False,
              "transparent_hugepages": "madvise", "transparent_hugepages_defrag": "madvise"}


def _facts(*gpus: dict, torch=TORCH_CU126, cuda_driver=12060, host=None, load=(0.05, 0.1, 0.1), free=500 * 2**30,
           euid=1000):
    nvml = FakeNVML(gpus=[dict(g) for g in gpus], cuda_driver=cuda_driver)
    info, gpu_facts = machine_facts.nvml_facts(nvml, euid=euid)
    assert nvml.initialised == 0  # shut down again
    return {"host": TUNED_HOST if host is None else host, "cpus": 16, "load_average": list(load),
            "disks": [{"path": "/work", "free_bytes": free, "total_bytes": 1000 * 2**30}],
            "torch": torch, "nvml": info, "gpus": gpu_facts}


def _by_check(findings):
    return {f.check: f for f in findings}


def test_a_tuned_runner_passes_every_check():
    findings = doctor.run_checks(_facts(HEALTHY_H100))
    assert {f.status for f in findings} == {"ok"}, [f for f in findings if f.status != "ok"]
    assert {f.check for f in findings} == {
        "gpu_processes", "gpu_mig", "gpu_persistence", "gpu_compute_mode", "gpu_ecc", "gpu_clocks",
        "gpu_clock_policy", "gpu_throttle",
        "gpu_temperature", "gpu_software", "cpu_governor", "cpu_turbo", "cpu_smt", "transparent_hugepages",
        "load_average", "disk_space"}
    assert all(f.fix is None for f in findings)


def test_a_badly_kept_runner_fails_and_warns_with_a_fix_for_each():
    bad = dict(HEALTHY_H100, processes=[(4242, 3 * 2**30)], gpu_util=97, mig=[1, 1], persistence=0, ecc=[1, 0],
               reasons=0x40 | 0x4, temperature=83, app_clock=1755, default_app_clock=1755)
    host = {"cpu_governor": "powersave", "cpu_turbo": True, "smt_active": True,
            "transparent_hugepages": "always", "transparent_hugepages_defrag": "madvise"}
    findings = doctor.run_checks(_facts(bad, torch={"version": "2.13.0", "cuda": "12.8", "hip": None},
                                        cuda_driver=12040, host=host, load=(9.0, 8, 8), free=2**30))
    by = _by_check(findings)
    expected = {"gpu_processes": "fail", "gpu_mig": "warn", "gpu_persistence": "warn", "gpu_ecc": "warn",
                "gpu_clocks": "warn", "gpu_clock_policy": "warn", "gpu_throttle": "fail", "gpu_temperature": "skip",
                "gpu_software": "warn",
                "cpu_governor": "warn", "cpu_turbo": "warn", "cpu_smt": "warn", "transparent_hugepages": "warn",
                "load_average": "fail", "disk_space": "fail"}
    assert {k: by[k].status for k in expected} == expected
    assert all(f.fix for f in findings if f.status in ("fail", "warn"))
    assert "4242" in by["gpu_processes"].summary and "3072 MiB" in by["gpu_processes"].summary
    assert "hw_thermal_slowdown" in by["gpu_throttle"].summary and "sw_power_cap" in by["gpu_throttle"].summary
    assert "--lock-gpu-clocks=1755,1755" in by["gpu_clocks"].fix
    assert "12.8" in by["gpu_software"].summary and "12.4" in by["gpu_software"].summary
    assert "nvidia-smi -i 0 -pm 1" in by["gpu_persistence"].fix
    assert "performance" in by["cpu_governor"].fix


@pytest.mark.parametrize("gpu, status, words", [
    ({"temperature": 80}, "fail", "slowdown threshold"),
    ({"temperature": 66}, "warn", "66 °C at idle"),
    ({"temperature": 40}, "ok", "40 °C at idle"),
    ({"temperature": 80, "gpu_util": 60}, "skip", "busy"),
    ({"temperature": None}, "skip", "no temperature"),
])
def test_idle_temperature(gpu, status, words):
    finding = _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100, **gpu))))["gpu_temperature"]
    assert finding.status == status and words in finding.summary


@pytest.mark.parametrize("gpu, status", [
    ({"gpu_util": 40}, "fail"),                                  # busy, but no process visible (another container)
    ({"graphics_processes": [(77, None)]}, "fail"),               # a display server
    ({"processes": None, "graphics_processes": None, "gpu_util": None}, "skip"),
    ({"gpu_util": 3}, "ok"),
])
def test_other_work_on_the_gpu(gpu, status):
    assert _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100, **gpu))))["gpu_processes"].status == status


@pytest.mark.parametrize("mode, status", [(0, "ok"), (3, "fail"), (2, "fail")])
def test_a_gpu_that_takes_one_process_at_a_time_fails_the_doctor(mode, status):
    # GPU review #12: both sides' workers hold a context at once; in EXCLUSIVE_PROCESS mode every
    # second one fails, so every benchmark would fail on one side
    found = _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100,
                                                    compute_mode=mode))))["gpu_compute_mode"]
    assert found.status == status and (status == "ok" or "nvidia-smi -i 0 -c DEFAULT" in found.fix)


@pytest.mark.parametrize("gpu, status", [
    ({"reasons": 0x1, "app_clock": 1980, "default_app_clock": 1980}, "warn"),  # boost decides
    ({"reasons": 0x1, "app_clock": 1400, "default_app_clock": 1980}, "ok"),    # application clocks lowered
    ({"reasons": 0x2}, "ok"),                                                   # locked clocks
    ({"reasons": None, "app_clock": None, "max_clock": None, "default_app_clock": None}, "skip"),
])
def test_clock_settings(gpu, status):
    assert _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100, **gpu))))["gpu_clocks"].status == status


@pytest.mark.parametrize("gpu, euid, status, words", [
    ({}, 1000, "ok", "a clock setting of this runner holds the clocks"),                 # held: left alone
    (BOOSTING_H100, 0, "ok", "may lock the clocks here (as root)"),
    (dict(BOOSTING_H100, app_clocks_restricted=0), 1000, "ok", "application clocks are unrestricted"),
    (BOOSTING_H100, 1000, "warn", "may not lock the clocks here"),
])
def test_the_clock_policy_says_whether_perfgate_may_lock_the_clocks_or_watches_the_rounds(gpu, euid, status, words):
    finding = _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100, **gpu), euid=euid)))["gpu_clock_policy"]
    assert finding.status == status and words in finding.summary, finding
    if status == "ok" and "may lock" in words:
        assert "SM 1755 MHz, memory 2619 MHz" in finding.summary  # the default application clock, memory's max
    if status == "warn":
        assert "nvidia-smi -acp UNRESTRICTED" in finding.fix


def test_uncorrected_ecc_errors_fail_and_unsupported_fields_skip():
    by = _by_check(doctor.run_checks(_facts(dict(HEALTHY_H100, ecc_uncorrected=3))))
    assert by["gpu_ecc"].status == "fail" and "3 uncorrected" in by["gpu_ecc"].summary
    consumer = dict(HEALTHY_H100, name="NVIDIA GeForce RTX 4090", mig=None, ecc=None, ecc_uncorrected=None)
    by = _by_check(doctor.run_checks(_facts(consumer)))
    assert by["gpu_mig"].status == "skip" and by["gpu_ecc"].status == "skip"
    assert by["gpu_mig"].subject == "GPU 0 (NVIDIA GeForce RTX 4090)"


@pytest.mark.parametrize("torch, driver, status", [
    ({"version": "2.13.0+cpu", "cuda": None, "hip": None}, 12040, "fail"),
    ({"version": "2.13.0", "cuda": "13.0", "hip": None}, 12080, "fail"),
    ({"version": "2.13.0", "cuda": "12.8", "hip": None}, 12040, "warn"),
    ({"version": "2.13.0", "cuda": "12.4", "hip": None}, 12080, "ok"),
    ({"version": "2.13.0", "cuda": "12.4", "hip": None}, None, "skip"),
    ({"version": "2.13.0+rocm6.2", "cuda": None, "hip": "6.2"}, 12040, "skip"),
    (None, 12040, "skip"),
])
def test_driver_cuda_and_torch_compatibility(torch, driver, status):
    finding = _by_check(doctor.run_checks(_facts(HEALTHY_H100, torch=torch, cuda_driver=driver)))["gpu_software"]
    assert finding.status == status, finding


def test_every_gpu_is_checked_and_ids_name_the_subject_when_several():
    hot = dict(HEALTHY_H100, processes=[(9, None)])
    summary = summarize(doctor.run_checks(_facts(HEALTHY_H100, hot)))
    assert summary["failed"] == ["gpu_processes:GPU 1 (NVIDIA H100 80GB HBM3)"]
    assert [c["subject"] for c in summary["checks"] if c["check"] == "gpu_mig"] == [
        "GPU 0 (NVIDIA H100 80GB HBM3)", "GPU 1 (NVIDIA H100 80GB HBM3)"]


def test_nvml_that_cannot_start_skips_the_gpu_checks_only():
    info, gpus = machine_facts.nvml_facts(FakeNVML(init_error="Driver Not Loaded"))
    assert info == {"available": False, "reason": "NVML unavailable: Driver Not Loaded"} and gpus == []
    findings = doctor.run_checks({"host": TUNED_HOST, "cpus": 2, "load_average": [0, 0, 0], "disks": [],
                                  "torch": None, "nvml": info, "gpus": gpus})
    assert [(f.check, f.status) for f in findings][0] == ("nvml", "skip")
    assert "Driver Not Loaded" in findings[0].summary
    assert {f.check for f in findings} >= {"cpu_governor", "load_average"}


def test_without_pynvml_the_reason_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    info, gpus = machine_facts.nvml_facts()
    assert info == {"available": False, "reason": "pynvml is not installed (pip install nvidia-ml-py)"} and gpus == []


@pytest.mark.parametrize("load, status", [((0.2, 0, 0), "ok"), ((1.5, 0, 0), "warn"), ((8.0, 0, 0), "fail"), (None, "skip")])
def test_load_average(load, status):
    assert doctor.check_load(list(load) if load else None, 16).status == status


def test_transparent_hugepages_and_cpu_settings_not_exposed_are_skipped():
    findings = _by_check(doctor.run_checks(_facts(HEALTHY_H100, host={})))
    assert all(findings[c].status == "skip" for c in ("cpu_governor", "cpu_turbo", "cpu_smt", "transparent_hugepages"))
    defrag = doctor.check_transparent_hugepages({"transparent_hugepages": "madvise", "transparent_hugepages_defrag": "always"})
    assert defrag.status == "warn"


def test_a_random_layout_warns_with_the_fix_for_its_cause(monkeypatch):
    from runner.pipeline.machine import layouts

    monkeypatch.delenv("PERFGATE_ASLR", raising=False)
    monkeypatch.setattr(layouts, "_setarch_works", lambda setarch: True)
    monkeypatch.setattr(layouts.shutil, "which", lambda name: "/usr/bin/setarch")
    assert layouts.layout_left_random() is None
    assert layouts.layout_pinned(["python"])[-2:] == ["-R", "python"]
    assert doctor.check_aslr(machine_facts.layout_facts()).status == "ok"
    # Docker's default seccomp profile refuses personality(ADDR_NO_RANDOMIZE): setarch -R fails
    monkeypatch.setattr(layouts, "_setarch_works", lambda setarch: False)
    assert layouts.layout_pinned(["python"]) == ["python"]
    denied = doctor.check_aslr(machine_facts.layout_facts())
    assert denied.status == "warn" and "not permitted" in denied.summary and "every benchmark of one side" in denied.summary
    assert "seccomp" in denied.fix
    monkeypatch.setattr(layouts.shutil, "which", lambda name: None)
    missing = doctor.check_aslr(machine_facts.layout_facts())
    assert "not installed" in missing.summary and "util-linux" in missing.fix
    monkeypatch.setenv("PERFGATE_ASLR", "1")
    chosen = doctor.check_aslr(machine_facts.layout_facts())
    assert chosen.status == "warn" and chosen.fix == "unset PERFGATE_ASLR"
    # facts without it (an older gatherer) run no aslr check
    assert "aslr" not in {f.check for f in doctor.run_checks(_facts(HEALTHY_H100))}


# -- this machine (no NVML library here) -----------------------------------------------------------

def test_gather_on_this_machine(tmp_path):
    facts = machine_facts.gather([tmp_path / "not-yet" / "out"])
    assert set(facts["host"]) >= {"cpu_governor", "cpu_turbo", "smt_active", "transparent_hugepages"}
    assert facts["cpus"] >= 1 and len(facts["load_average"]) == 3
    assert facts["disks"] and all(d["free_bytes"] <= d["total_bytes"] for d in facts["disks"])
    assert len({d["path"] for d in facts["disks"]}) == len(facts["disks"])
    assert isinstance(facts["nvml"]["available"], bool)
    if not facts["nvml"]["available"]:
        assert facts["nvml"]["reason"] and facts["gpus"] == []
    findings = doctor.run_checks(facts)
    assert {f.status for f in findings} <= set(STATUSES)
    assert "aslr" in {f.check for f in findings}
    assert facts["layout"]["randomised"] is None or isinstance(facts["layout"]["randomised"], str)


def test_torch_build_is_read_without_importing_torch():
    code = ("import sys, json; from runner.pipeline.machine.machine_facts import torch_build; "
            "print(json.dumps([torch_build(), 'torch' in sys.modules]))")
    build, imported = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                check=True).stdout)
    assert imported is False
    assert build["version"] == metadata.version("torch")


def test_cli_prints_a_table_with_fixes_and_json(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(doctor, "DISK_FAIL_BYTES", 2**62)  # make one check fail for sure
    assert main(["doctor", "--path", str(tmp_path)]) == 1
    out = " ".join(capsys.readouterr().out.split())  # the fixes wrap at the terminal's width
    assert "disk_space" in out and "How to fix:" in out and "free space there" in out
    assert main(["doctor", "--json", "--path", str(tmp_path)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert any(f.startswith("disk_space") for f in data["failed"])
    monkeypatch.setattr(doctor, "DISK_FAIL_BYTES", 0)
    monkeypatch.setattr(doctor, "LOAD_FAIL_PER_CPU", 10**6)
    assert main(["doctor", "--json", "--path", str(tmp_path)]) == 0


def test_the_doctor_fits_the_terminal_it_prints_to(capsys, monkeypatch, tmp_path):
    """COLUMNS=80 (a CI log): no line wider (the table was drawn 120 wide whatever the width)."""
    monkeypatch.setattr(doctor, "DISK_FAIL_BYTES", 2**62)
    for columns in (80, 100):
        monkeypatch.setenv("COLUMNS", str(columns))
        main(["doctor", "--path", str(tmp_path)])
        lines = capsys.readouterr().out.splitlines()
        assert "How to fix:" in lines and max(map(len, lines)) <= columns


# -- results.json and the report --------------------------------------------------------------------

def _doc_with(doctor_record):
    from testkit.results_doc import ENVIRONMENT, results_doc

    doc = results_doc()
    doc["environment"] = dict(ENVIRONMENT, doctor=doctor_record)
    return doc


def test_the_record_is_schema_valid_and_the_report_warns_on_a_failed_check():
    bad = dict(HEALTHY_H100, processes=[(4242, None)])
    record = summarize(doctor.run_checks(_facts(bad)))
    doc = _doc_with(record)
    assert validation_errors(doc) == []
    md, html, term = (report.render(doc, fmt) for fmt in ("md", "html", "term"))
    assert ("> **Warning:** perfgate doctor: 1 check(s) failed on this runner "
            "(GPU 0 (NVIDIA H100 80GB HBM3): " in md)
    assert "| runner checks (perfgate doctor) | 1 failed (gpu_processes) |" in md
    assert report.view.doctor_counts({"failed": [], "warned": ["aslr"]}) == "1 warning (aslr)"
    assert report.view.doctor_counts({"failed": ["a", "b"], "warned": ["c", "d"]}) == "2 failed (a, b); 2 warnings (c, d)"
    assert "perfgate doctor: 1 check(s) failed" in html and "warning: perfgate doctor: 1 check(s) failed" in term

    clean = _doc_with(summarize(doctor.run_checks(_facts(HEALTHY_H100))))
    md = report.render(clean, "md")
    assert "perfgate doctor: " not in md and "| runner checks (perfgate doctor) | all checks passed |" in md
    assert "doctor" not in report.render(_doc_with(None), "term")  # results without a record: no line


def test_the_record_is_escaped_where_it_is_shown():
    record = summarize([Finding("gpu_processes", "GPU 0", "fail",
                                "1 other: <img src=x onerror=alert(1)> | x")])
    doc = _doc_with(record)
    html, md = report.render(doc, "html"), report.render(doc, "md")
    assert "<img" not in html and "&lt;img" in html
    assert "<img" not in md and "&lt;img" in md and "&#124; x" in md  # runner.escape.md_text


def test_a_malformed_record_is_rejected_by_the_schema():
    doc = _doc_with({"checks": [{"check": "x", "subject": "y", "status": "bad", "summary": "z", "fix": None}],
                     "failed": [], "warned": []})
    assert any("doctor" in line for line in validation_errors(doc))


@pytest.mark.slow
def test_compare_and_run_record_the_doctor_and_the_report_warns(tmp_path, monkeypatch):
    from testkit.gitrepo import make_repo
    from .gitrepo import LIB_BASE, LIB_HEAD

    monkeypatch.setattr(doctor, "DISK_FAIL_BYTES", 2**62)
    repo = make_repo(tmp_path / "repo", LIB_BASE, LIB_HEAD)
    out = tmp_path / "cmp"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--filter", "bench_same", "--max-time", "10", "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert validation_errors(doc) == []
    assert any(f.startswith("disk_space") for f in doc["environment"]["doctor"]["failed"])
    assert "perfgate doctor: " in (out / "report.md").read_text()
    run_out = tmp_path / "run"
    assert main(["run", "--repo", str(repo), "--rev", "base", "--out", str(run_out), "--filter", "bench_same",
                 "--max-time", "2", "--quiet"]) == 0
    run_doc = json.loads((run_out / "results.json").read_text())
    assert run_doc["environment"]["doctor"]["checks"] and "perfgate doctor: " in (run_out / "report.md").read_text()


@pytest.mark.parametrize("sandbox, status", [
    ({"available": True, "reason": None, "in_actions": True}, "ok"),
    ({"available": False, "reason": "bubblewrap (bwrap) is not installed on this runner", "in_actions": True}, "fail"),
    ({"available": False, "reason": "bubblewrap cannot create its namespaces here: No permissions", "in_actions": False},
     "skip"),
])
def test_the_sandbox_check_fails_only_where_the_action_needs_it(sandbox, status):
    finding = doctor.check_sandbox(sandbox)
    assert finding.status == status and finding.check == "sandbox"
    if not sandbox["available"]:
        assert sandbox["reason"] in finding.summary and "apt-get install bubblewrap" in finding.fix


def test_the_sandbox_check_says_how_each_limit_is_enforced_here():
    """An operator sees before trusting a runner whether a fork bomb meets a cgroup or only an
    rlimit (issue 51)."""
    finding = doctor.check_sandbox({"available": True, "limits": {
        "pids": "RLIMIT_NPROC", "memory": "cgroup v2 memory.max"}})
    assert finding.status == "ok"
    assert finding.summary.endswith(
        "its limits by memory: cgroup v2 memory.max; pids: RLIMIT_NPROC")


def test_the_sandbox_facts_say_why_not(monkeypatch):
    from runner.sandbox import bubblewrap as sandbox_mod
    from runner.pipeline.machine import machine_facts

    def missing(*a, **k):
        raise sandbox_mod.SandboxUnavailable("bubblewrap (bwrap) is not installed on this runner")

    monkeypatch.setattr(sandbox_mod, "probe", missing)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    facts = machine_facts.sandbox_facts()
    limits = facts.pop("limits")
    assert facts == {"available": False, "reason": "bubblewrap (bwrap) is not installed on this runner",
                     "in_actions": True}
    # this machine's mechanisms, whatever they are
    assert set(limits) == {"pids", "memory", "disk", "wall"}
    assert doctor.run_checks({"sandbox": facts, "disks": []})[-1].status == "fail"
