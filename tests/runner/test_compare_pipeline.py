"""The real pipeline on generated repositories: real git, real worker subprocesses, CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner import results as results_mod
from runner.cli.main import main
from testkit.gitrepo import make_repo

from .gitrepo import LIB_BASE, LIB_HEAD

#: Every test here but one is in the slow lane; the 800x regression is the fast lane's real
#: compare of the engine (no load can hide it).
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One compare of the 30 %-more / 30 %-less / same / raising repository, profile included.

    120 s, not 60: profiling may count on 15 % of the budget, and on a loaded 2-CPU machine (load
    4–5) 9 s did not hold the profile passes; the benchmarks decide long before either budget."""
    tmp = tmp_path_factory.mktemp("cmp")
    repo = make_repo(tmp / "repo", LIB_BASE, LIB_HEAD)
    out = tmp / "out"
    code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--max-time", "120", "--quiet"])
    return code, out, results_mod.load(out / "results.json")


def _bench(doc, name):
    return next(b for b in doc["benchmarks"] if b["name"] == name)


@slow
def test_thirty_percent_more_work_is_a_regression(compared):
    code, _, doc = compared
    assert code == 0
    slow = _bench(doc, "bench_slow")
    assert slow["change"]["verdict"] == "regression"
    assert 1.15 <= slow["change"]["ratio"] <= 1.5
    assert slow["change"]["ci_low"] > 1.0


@slow
def test_thirty_percent_less_work_is_an_improvement(compared):
    _, _, doc = compared
    fast = _bench(doc, "bench_fast")
    assert fast["change"]["verdict"] == "improvement"
    assert 0.55 <= fast["change"]["ratio"] <= 0.85


@slow
def test_untouched_benchmark_is_never_called_changed(compared):
    _, _, doc = compared
    assert _bench(doc, "bench_same")["change"]["verdict"] in ("unchanged", "inconclusive")


@slow
def test_benchmark_raising_on_head_fails_with_its_message(compared):
    _, _, doc = compared
    fragile = _bench(doc, "bench_fragile")
    assert fragile["change"]["verdict"] == "failed"
    assert "fragile broke on head" in fragile["head"]["error"]
    assert fragile["base"]["error"] is None
    assert doc["summary"]["failed"] == 1 and doc["summary"]["regression"] == 1


@slow
def test_samples_are_paired_and_sides_alternate(compared):
    _, _, doc = compared
    slow = _bench(doc, "bench_slow")
    assert len(slow["base"]["samples"]) == len(slow["head"]["samples"]) == slow["change"]["rounds"]
    assert slow["change"]["rounds"] in doc["settings"]["looks"]
    # the L2 flush a cold-cache call gets is a recorded fact (GPU review #15)
    from runner.protocol import L2_FLUSH

    assert doc["settings"]["l2_flush"] == L2_FLUSH


@slow
def test_outputs_written_and_shas_reported(compared, tmp_path):
    _, out, doc = compared
    assert (out / "report.md").read_text().startswith("<!-- perfgate -->")
    assert "<svg" in (out / "report.html").read_text()
    assert len(doc["base"]["sha"]) == 40 and doc["base"]["sha"] != doc["head"]["sha"]
    # the report re-renders from results.json alone
    assert main(["report", str(out / "results.json"), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "bench_slow" in (tmp_path / "r.md").read_text()


@slow
def test_the_progress_record_ends_with_the_compare_finishing(compared):
    """The record a sandbox's limit error reads (runner.pipeline.progress_record) followed the
    compare to its end: a limit reached now would not name the last benchmark measured."""
    from runner.sandbox.confine import read_progress
    from runner.sandbox.limits import progress_words

    _, out, _ = compared
    assert progress_words(read_progress(out)).startswith("after every benchmark")


@slow
def test_profiles_and_traces_for_compared_benchmarks(compared):
    _, out, doc = compared
    slow = _bench(doc, "bench_slow")
    assert slow["profile"] is not None
    assert (out / slow["profile"]["traces"]["head"]).is_file()


@slow
def test_worktrees_are_cleaned_up(compared):
    _, _, doc = compared
    repo = Path(doc["repository"])
    listing = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True).stdout
    assert len(listing.strip().splitlines()) == 1


def _perfgate(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True, text=True, cwd=cwd)


@slow
def test_unknown_ref_exits_2_with_one_line(tmp_path):
    repo = make_repo(tmp_path / "repo", LIB_BASE, LIB_HEAD)
    proc = _perfgate("compare", "--repo", str(repo), "--base", "base", "--head", "no-such-branch", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "unknown ref 'no-such-branch'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@slow
def test_bad_config_exits_2_naming_key_and_file(tmp_path):
    files = dict(LIB_BASE)
    files["perfgate.toml"] = "treshold = 0.05\n"
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    proc = _perfgate("compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "unknown key 'treshold'" in proc.stderr and "perfgate.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


@slow
def test_not_a_repository_exits_2(tmp_path):
    proc = _perfgate("compare", "--repo", str(tmp_path), "--base", "a", "--head", "b")
    assert proc.returncode == 2 and "not a git repository" in proc.stderr


@slow
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


@slow
def test_crash_and_hang_fail_only_their_benchmark(tmp_path):
    base = {"benchmarks/bench_crash.py": """
        def bench_ok(device):
            return lambda: sum(range(2000))

        def bench_dies(device):
            return lambda: sum(range(2000))

        def bench_hangs(device):
            return lambda: sum(range(2000))
    """, "perfgate.toml": "min_sample_time = 0.005\nmax_time = 20\ntimeout = 3\n"}
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


@slow
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


ISOLATION = """
    import os

    STATE = {"touched_by": None}

    def bench_a_leaves_state(device):
        # what a benchmark leaves behind in its process: a module global and an environment variable
        STATE["touched_by"] = "bench_a"
        os.environ["PERFGATE_TEST_LEFTOVER"] = "1"
        return lambda: sum(range(2000))

    def bench_b_needs_a_fresh_process(device):
        if STATE["touched_by"] is not None or "PERFGATE_TEST_LEFTOVER" in os.environ:
            raise RuntimeError("ran in a process another benchmark used")
        pid = os.getpid()
        return lambda: sum(range(2000 + 0 * pid))
"""


@slow
def test_every_benchmark_and_process_pair_runs_in_a_fresh_process(tmp_path):
    """A benchmark's process state must not come from the benchmark before it (the real case: an
    untouched loss step 45 % faster because the benchmark before it changed the allocator state)."""
    files = {"benchmarks/bench_iso.py": ISOLATION, "perfgate.toml": "min_sample_time = 0.002\nmax_time = 90\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    by = {b["name"]: b for b in doc["benchmarks"]}
    assert by["bench_b_needs_a_fresh_process"]["change"]["verdict"] not in ("failed", "new")
    assert by["bench_b_needs_a_fresh_process"]["base"]["error"] is None
    worker = doc["environment"]["worker"]
    pairs = sum(b["change"]["process_pairs"] for b in doc["benchmarks"])
    # one process per side for the env query, then one per benchmark and process pair
    assert worker["sides"]["head"]["processes"] >= pairs + 1
    assert worker["sides"]["head"]["preloaded"] is True
    # glibc's mmap threshold fixed at its start-up value, the heap never trimmed: no process's
    # history decides
    assert worker["allocator"] == "fresh"
    assert worker["allocator_env"]["MALLOC_MMAP_THRESHOLD_"] == str(128 * 1024)
    assert worker["allocator_env"]["MALLOC_TRIM_THRESHOLD_"] == str(16 * 2**30)
    # one calibration per benchmark: both sides take samples of the same number of calls
    assert all(b["base"]["number"] == b["head"]["number"] for b in doc["benchmarks"])
    change = by["bench_a_leaves_state"]["change"]
    # 8, doubled for cheap rounds (runner.pipeline.timing.schedule.rounds_per_pair)
    r = change["rounds_per_pair"]
    assert r in (8, 16, 32, 64)
    assert [p["start"] for p in change["pairs"]] == [i * r for i in range(len(change["pairs"]))]
    assert all(p["rounds"] == r and p["used"] for p in change["pairs"])


@slow
def test_benchmark_files_that_start_threads_are_not_preloaded(tmp_path):
    """A file that starts a thread (or CUDA) on import would make every forked child unsafe
    (GNU OpenMP hangs in a forked child): the server is restarted without preloading, and the
    benchmark still runs."""
    files = {"benchmarks/bench_thread.py": """
        import threading, time

        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()

        def bench_x(device):
            return lambda: sum(range(1000))
    """, "perfgate.toml": "min_sample_time = 0.002\nmax_time = 20\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    sides = doc["environment"]["worker"]["sides"]
    assert sides["head"]["preloaded"] is False and "thread" in sides["head"]["preload_refused"][0]
    assert doc["benchmarks"][0]["change"]["verdict"] not in ("failed", "new")


@slow
def test_parameter_values_that_are_not_json_keep_stable_names(tmp_path):
    """dtypes and functions as params: names without memory addresses, values found again in the
    worker from the file (they never cross the process boundary)."""
    files = {"benchmarks/bench_params.py": """
        import torch
        import torch.nn.functional as F

        def bench_act(device, act, dtype):
            x = torch.randn(64, dtype=dtype)
            return lambda: act(x)

        bench_act.params = {"act": [F.gelu, F.silu], "dtype": [torch.float32, torch.bfloat16]}
    """, "perfgate.toml": "min_sample_time = 0.002\nmax_time = 20\nmin_rounds = 12\nmax_rounds = 12\npair_rounds = 4\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    names = sorted(b["name"] for b in doc["benchmarks"])
    assert names == ["bench_act[act=gelu,dtype=torch.bfloat16]", "bench_act[act=gelu,dtype=torch.float32]",
                     "bench_act[act=silu,dtype=torch.bfloat16]", "bench_act[act=silu,dtype=torch.float32]"]
    assert all(b["change"]["verdict"] not in ("failed", "new") for b in doc["benchmarks"])


@slow
def test_processes_a_benchmark_leaves_behind_do_not_outlive_the_compare(tmp_path):
    pids = tmp_path / "pids.txt"
    files = {"benchmarks/bench_leftover.py": f"""
        import subprocess

        def bench_spawns(device):
            proc = subprocess.Popen(["sleep", "600"])
            with open({str(pids)!r}, "a") as fh:
                fh.write(f"{{proc.pid}}\\n")
            return lambda: sum(range(1000))
    """, "perfgate.toml": "min_sample_time = 0.002\nmax_time = 30\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(tmp_path / "out"),
                 "--no-profile", "--quiet"]) == 0
    started = [int(p) for p in pids.read_text().split()]
    # one per side and process pair; at least two pairs (a verdict needs them; the budget is large
    # enough for them on a loaded 2-CPU machine, where 15 s once left room for one)
    assert len(started) >= 4
    alive = []
    for pid in started:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    assert alive == []


@slow
def test_benchmark_files_that_allocate_tensors_at_import_are_not_preloaded(tmp_path):
    """Module-level data in the fork server would be shared by every process pair at the same
    physical pages: each child imports (and allocates) it itself instead."""
    files = {"benchmarks/bench_weights.py": """
        import torch

        W = torch.randn(1024, 1024)  # 4 MiB at import

        def bench_mv(device):
            x = torch.randn(1024)
            return lambda: W @ x
    """, "perfgate.toml": "min_sample_time = 0.002\nmax_time = 20\n"}
    repo = make_repo(tmp_path / "repo", files, {"README.md": "head\n"})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    head = doc["environment"]["worker"]["sides"]["head"]
    assert head["preloaded"] is False and "MiB of tensors/arrays" in head["preload_refused"][0]
    assert doc["benchmarks"][0]["change"]["verdict"] not in ("failed", "new")


@slow
def test_an_install_venv_sees_the_runners_packages_and_its_own_first(tmp_path):
    """perfgate usually runs in a venv, whose packages ``--system-site-packages`` alone does not
    share: the side's venv must still import the runner's torch (here: rich, also only in the
    runner's venv), with its own site-packages first."""
    import subprocess
    import sys
    import sysconfig

    from runner.pipeline.revisions import share_site_packages

    venv = tmp_path / "side"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    share_site_packages(venv)
    runner_site = sysconfig.get_paths()["purelib"]
    probe = ("import sys, sysconfig, rich; print(rich.__file__); "
             f"print(sys.path.index(sysconfig.get_paths()['purelib']), sys.path.index({runner_site!r}))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out[0].startswith(runner_site)
    assert int(out[1]) < int(out[2])  # what the install command puts in the side's venv wins


MASK_STEP = '''import torch

def bench_decode_step(device):
    """One decode step's attention mask: base masks the {what}."""
    cache = torch.randn(8_000_000)
    pos = 2048
    def step():
        return (cache[:{n}] > 0).sum()
    return step
'''


def test_a_huge_regression_from_a_real_report_is_decided_within_the_budget(tmp_path):
    """The real report's kind (a mask computed over the whole buffer on every step: 117 µs → 94 ms,
    ~800×) came out `inconclusive` after 2 min 42 s with --max-time 60: one count of calls per
    sample for both sides made one head sample last 19 s. Now each side takes its own count and two
    process pairs decide it."""
    repo = make_repo(tmp_path / "repo", {"benchmarks/bench_mask.py": MASK_STEP.format(what="positions so far", n="pos")},
                     {"benchmarks/bench_mask.py": MASK_STEP.format(what="whole cache", n="len(cache)")})
    out = tmp_path / "out"
    # a budget a loaded 2-CPU machine still decides in (the bug took 19 s a head sample at any
    # budget); what the fix changed is asserted by counts, not by seconds
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--max-time", "120", "--no-profile", "--quiet"]) == 0
    doc = json.loads((out / "results.json").read_text())
    (bench,) = doc["benchmarks"]
    change = bench["change"]
    assert change["verdict"] == "regression" and change["ratio"] > 50
    assert 1 < change["ci_low"] <= change["ratio"] <= change["ci_high"] < float("inf")
    assert change["shared_number"] is False and bench["base"]["number"] > bench["head"]["number"]
    assert change["stop_reason"].startswith("decided at look")
    assert len(change["pairs"]) <= 3  # decided at the first looks, not by the budget
    assert doc["settings"]["budget"]["spent_s"] <= 132  # --max-time kept within 10 %
    md = (out / "report.md").read_text()
    assert "× slower" in md and "calls per sample differ (base" in md.lower()


GC_STEP = '''
import gc

import torch  # noqa: F401 - its thousands of objects are what a full collection walks


def bench_move_to_meta(device):
    x = [0]

    def step():
        x[0] += 1
{collect}
    return step
'''


@slow
def test_a_collection_the_benchmark_asks_for_costs_what_it_costs_in_a_plain_process(tmp_path):
    """The real PR's kind (accelerate #2914: a ``gc.collect()`` on every call removed): ×0.0001 in
    fresh processes, ×0.4 from perfgate while the fork server's objects stayed frozen in its
    children (a collection there walked the benchmark's objects only)."""
    repo = make_repo(tmp_path / "repo", {"benchmarks/bench_gc.py": GC_STEP.format(collect="        gc.collect()")},
                     {"benchmarks/bench_gc.py": GC_STEP.format(collect="")})
    out = tmp_path / "out"
    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                 "--max-time", "20", "--no-profile", "--quiet"]) == 0
    (bench,) = json.loads((out / "results.json").read_text())["benchmarks"]
    # a full collection over torch's objects takes milliseconds; the step, well under a microsecond
    assert bench["base"]["median"] > 1e-3, bench["base"]["median"]
    assert bench["change"]["verdict"] == "improvement" and bench["change"]["ratio"] < 0.01
