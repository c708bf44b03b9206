"""The real pipeline on generated repositories: real git, real worker subprocesses, CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner import results as results_mod
from runner.cli import main

from .gitrepo import LIB_BASE, LIB_HEAD, make_repo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One compare of the 30 %-more / 30 %-less / same / raising repository, profile included."""
    tmp = tmp_path_factory.mktemp("cmp")
    repo = make_repo(tmp / "repo", LIB_BASE, LIB_HEAD)
    out = tmp / "out"
    code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--max-time", "60", "--quiet"])
    return code, out, results_mod.load(out / "results.json")


def _bench(doc, name):
    return next(b for b in doc["benchmarks"] if b["name"] == name)


def test_thirty_percent_more_work_is_a_regression(compared):
    code, _, doc = compared
    assert code == 0
    slow = _bench(doc, "bench_slow")
    assert slow["change"]["verdict"] == "regression"
    assert 1.15 <= slow["change"]["ratio"] <= 1.5
    assert slow["change"]["ci_low"] > 1.0


def test_thirty_percent_less_work_is_an_improvement(compared):
    _, _, doc = compared
    fast = _bench(doc, "bench_fast")
    assert fast["change"]["verdict"] == "improvement"
    assert 0.55 <= fast["change"]["ratio"] <= 0.85


def test_untouched_benchmark_is_never_called_changed(compared):
    _, _, doc = compared
    assert _bench(doc, "bench_same")["change"]["verdict"] in ("unchanged", "inconclusive")


def test_benchmark_raising_on_head_fails_with_its_message(compared):
    _, _, doc = compared
    fragile = _bench(doc, "bench_fragile")
    assert fragile["change"]["verdict"] == "failed"
    assert "fragile broke on head" in fragile["head"]["error"]
    assert fragile["base"]["error"] is None
    assert doc["summary"]["failed"] == 1 and doc["summary"]["regression"] == 1


def test_samples_are_paired_and_sides_alternate(compared):
    _, _, doc = compared
    slow = _bench(doc, "bench_slow")
    assert len(slow["base"]["samples"]) == len(slow["head"]["samples"]) == slow["change"]["rounds"]
    assert slow["change"]["rounds"] in doc["settings"]["looks"]


def test_outputs_written_and_shas_reported(compared, tmp_path):
    _, out, doc = compared
    assert (out / "report.md").read_text().startswith("<!-- perfgate -->")
    assert "<svg" in (out / "report.html").read_text()
    assert len(doc["base"]["sha"]) == 40 and doc["base"]["sha"] != doc["head"]["sha"]
    # the report re-renders from results.json alone
    assert main(["report", str(out / "results.json"), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "bench_slow" in (tmp_path / "r.md").read_text()


def test_profiles_and_traces_for_compared_benchmarks(compared):
    _, out, doc = compared
    slow = _bench(doc, "bench_slow")
    assert slow["profile"] is not None
    assert (out / slow["profile"]["traces"]["head"]).is_file()


def test_worktrees_are_cleaned_up(compared):
    _, _, doc = compared
    repo = Path(doc["repository"])
    listing = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True).stdout
    assert len(listing.strip().splitlines()) == 1


def _perfgate(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_unknown_ref_exits_2_with_one_line(tmp_path):
    repo = make_repo(tmp_path / "repo", LIB_BASE, LIB_HEAD)
    proc = _perfgate("compare", "--repo", str(repo), "--base", "base", "--head", "no-such-branch", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "unknown ref 'no-such-branch'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_config_exits_2_naming_key_and_file(tmp_path):
    files = dict(LIB_BASE)
    files["perfgate.toml"] = "treshold = 0.05\n"
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    proc = _perfgate("compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "unknown key 'treshold'" in proc.stderr and "perfgate.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_not_a_repository_exits_2(tmp_path):
    proc = _perfgate("compare", "--repo", str(tmp_path), "--base", "a", "--head", "b")
    assert proc.returncode == 2 and "not a git repository" in proc.stderr


def test_no_benchmarks_exits_2(tmp_path):
    files = {"README.md": "x\n", "benchmarks/helper.py": "X = 1\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "y\n"})
    proc = _perfgate("compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "no benchmarks found" in proc.stderr


CRASHY = {
    "benchmarks/bench_crash.py": """
        import os, time

        def bench_ok(device):
            return lambda: sum(range(2000))

        def bench_dies(device):
            def run():
                os._exit(7)
            return run

        def bench_hangs(device):
            def run():
                time.sleep(60)
            return run
    """,
}


def test_crash_and_hang_fail_only_their_benchmark(tmp_path):
    base = {"benchmarks/bench_crash.py": """
        def bench_ok(device):
            return lambda: sum(range(2000))

        def bench_dies(device):
            return lambda: sum(range(2000))

        def bench_hangs(device):
            return lambda: sum(range(2000))
    """, "perfgate.toml": "min_sample_time = 0.005\nmax_time = 30\ntimeout = 3\n"}
    repo = make_repo(tmp_path / "repo", base, CRASHY)
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    by = {b["name"]: b for b in doc["benchmarks"]}
    assert by["bench_dies"]["change"]["verdict"] == "failed"
    assert "exited with status 7" in by["bench_dies"]["head"]["error"]
    assert by["bench_hangs"]["change"]["verdict"] == "failed"
    assert "timed out" in by["bench_hangs"]["head"]["error"]
    # the healthy benchmark was still measured, paired, in the restarted workers
    assert by["bench_ok"]["change"]["verdict"] not in ("failed", "new", "removed")
    assert by["bench_ok"]["change"]["rounds"] >= 8 and by["bench_ok"]["change"]["ratio"] is not None


def test_new_and_removed_benchmarks(tmp_path):
    base = {"benchmarks/bench_a.py": """
        def bench_keep(device):
            return lambda: sum(range(1000))

        def bench_old(device):
            return lambda: sum(range(1000))
    """, "perfgate.toml": "min_sample_time = 0.005\nmax_time = 20\n"}
    head = {"benchmarks/bench_a.py": """
        import mylib_new

        def bench_keep(device):
            return lambda: sum(range(1000))

        def bench_added(device):
            return lambda: mylib_new.f()
    """, "benchmarks/mylib_new_shim.py": "", "mylib_new.py": "def f():\n    return sum(range(1000))\n"}
    repo = make_repo(tmp_path / "repo", base, head)
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    by = {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"]}
    assert by["bench_added"] == "new"
    assert by["bench_old"] == "removed"
    assert by["bench_keep"] not in ("failed", "new", "removed")
    added = next(b for b in doc["benchmarks"] if b["name"] == "bench_added")
    assert added["head"]["samples"] and added["base"]["error"]  # measured on head, the reason on base
