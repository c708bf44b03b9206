"""Benchmark scripts as they are (tests/fixtures/suites/scripts_example): Triton ``perf_report``
grids and ``do_bench`` loops, ``torch.utils.benchmark.Timer`` scripts — their names, what a case
times, the stand-in ``triton.testing``, skips — and one real compare of a grid whose head wins small
sizes and loses large ones."""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import pytest

from runner.conventions import capture, triton as triton_convention
from runner.conventions.base import Skipped
from runner.conventions.labels import Call, grid_points, varying_keys
from runner.worker.child import list_suite, prepare
from testkit.gitrepo import git

from .gitrepo import suite_repo

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "scripts_example"

GRID = ["scale-performance[N=256,provider=Lib]", "scale-performance[N=256,provider=Ref]",
        "scale-performance[N=1024,provider=Lib]", "scale-performance[N=1024,provider=Ref]",
        "scale-performance[N=16384,provider=Lib]", "scale-performance[N=16384,provider=Ref]"]
LOOP = ["benchmark_loop[x=256,kernel_provider=lib]", "benchmark_loop[x=4096,kernel_provider=lib]",
        "benchmark_loop[x=256,kernel_provider=ref]", "benchmark_loop[x=4096,kernel_provider=ref]"]


@pytest.fixture
def example(suite_copy):
    return suite_copy(EXAMPLE)


def _steps(monkeypatch) -> list[int]:
    """The loop counts ``kernels.spin`` is called with from now on (what a case really runs)."""
    import kernels

    calls: list[int] = []
    monkeypatch.setattr(kernels, "spin", calls.append)
    return calls


def _prepared(example: Path, folder: str, suite: str, case: dict):
    return prepare({"dir": str(example / folder), "case": case, "suite": suite}, "cpu")


# -- Triton ----------------------------------------------------------------------------------------
def test_grids_are_named_as_their_tables_and_loops_by_what_tells_their_calls_apart(example):
    listing = list_suite(str(example / "triton"), "triton")
    cases = {c["name"]: c for c in listing["benchmarks"]}
    assert list(cases) == GRID + LOOP
    assert cases[GRID[2]]["params"] == {"N": "1024", "provider": "Lib"}
    assert cases[GRID[2]]["family"] == "scale-performance" and cases[GRID[2]]["kind"] == "grid"
    assert cases[LOOP[1]]["params"] == {"x": "4096", "kernel_provider": "lib"}
    assert cases[LOOP[1]]["keys"] == ["x", "kernel_provider"]  # the mode is the same in every call: left out
    assert listing["errors"] == []
    assert listing["skipped"] == [{"name": "bench_nothing.py", "file": "bench_nothing.py",
                                   "reason": "the script made no measuring call perfgate can capture"}]
    # no GPU here: the stand-in's do_bench, in the stand-in module or patched into real Triton's
    # (CI installs the kernels extra, and the kernels tests import it first)
    stand_in = triton_convention._stand_in_do_bench
    assert sys.modules["triton.testing"].do_bench.__wrapped__ is stand_in


def test_a_case_times_what_its_script_handed_to_do_bench(example, monkeypatch):
    cases = {c["name"]: c for c in list_suite(str(example / "triton"), "triton")["benchmarks"]}
    steps = _steps(monkeypatch)
    for name, expected in ((GRID[4], 16384), (GRID[1], 256), (LOOP[3], 4096)):
        fn = _prepared(example, "triton", "triton", cases[name]).fn
        steps.clear()
        fn()
        fn()
        assert steps == [expected, expected], name


def test_the_other_revision_names_its_calls_the_same_way_or_has_not_the_case(example):
    case = {c["name"]: c for c in list_suite(str(example / "triton"), "triton")["benchmarks"]}[LOOP[1]]
    script = example / "triton" / "benchmark_loop.py"
    script.write_text(script.read_text().replace("x_values=[256, 4096]", "x_values=[4096, 256]"))
    assert _prepared(example, "triton", "triton", case).fn is not None  # found by name, not by position
    script.write_text(script.read_text().replace("x_values=[4096, 256]", "x_values=[256]"))
    with pytest.raises(LookupError, match=r"benchmark_loop\[x=4096,kernel_provider=lib\] is not among the cases"):
        _prepared(example, "triton", "triton", case)


def test_grad_to_none_and_the_grad_mode_of_the_call_hold_for_every_timed_call(tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(tmp_path)
    (tmp_path / "seen.py").write_text("x = None\nmodes = []\n")
    (tmp_path / "bench_grad.py").write_text(textwrap.dedent("""
        import torch
        import triton

        import seen

        seen.x = torch.ones(3, requires_grad=True)

        def step():
            (seen.x * 2).sum().backward()

        @torch.no_grad()
        def inference():
            return triton.testing.do_bench(lambda: seen.modes.append(torch.is_grad_enabled()))

        if __name__ == "__main__":
            triton.testing.do_bench(step, grad_to_none=[seen.x], quantiles=[0.5, 0.2, 0.8])
            inference()
    """))
    cases = list_suite(str(tmp_path), "triton")["benchmarks"]
    assert [c["name"] for c in cases] == ["bench_grad", "bench_grad#2"]
    backward = _prepared(tmp_path, ".", "triton", cases[0])
    backward.fn()
    backward.fn()
    seen = sys.modules["seen"]
    assert torch.equal(seen.x.grad, torch.full((3,), 2.0))  # reset before each call, not accumulated
    backward.teardown()
    inference = _prepared(tmp_path, ".", "triton", cases[1])
    inference.fn()
    assert seen.modes == [False] and torch.is_grad_enabled() is False  # the call's no_grad, for the worker's life
    inference.teardown()
    assert torch.is_grad_enabled() is True


def test_a_grid_point_that_hands_nothing_to_do_bench_is_skipped_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench_events.py").write_text(textwrap.dedent("""
        import triton

        @triton.testing.perf_report(triton.testing.Benchmark(x_names=["N"], x_vals=[1, 2], line_arg="provider",
                                    line_vals=["a"], line_names=["A"], plot_name="timed-by-hand", args={}))
        def bench(N, provider):
            return 1.0  # timed with its own CUDA events, not do_bench
    """))
    cases = list_suite(str(tmp_path), "triton")["benchmarks"]
    assert [c["name"] for c in cases] == ["timed-by-hand[N=1,provider=A]", "timed-by-hand[N=2,provider=A]"]
    with pytest.raises(Skipped, match="handed nothing to triton.testing.do_bench"):
        _prepared(tmp_path, ".", "triton", cases[1])


def test_real_triton_without_a_gpu_gets_the_stand_ins_do_bench(monkeypatch):
    # real Triton on a CPU runner cannot run do_bench ("0 active drivers"), nor be imported twice
    testing = types.ModuleType("triton.testing")
    testing.do_bench = lambda *a, **k: 1 / 0
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    monkeypatch.setattr(triton_convention, "_gpu", lambda: False)
    assert triton_convention.install() is testing
    assert testing.do_bench.__wrapped__ is triton_convention._stand_in_do_bench
    assert testing.do_bench(lambda: None) > 0        # timed by the stand-in, not the driver


def test_where_triton_is_installed_its_module_is_patched_not_replaced(monkeypatch):
    real = types.ModuleType("triton")
    testing = types.ModuleType("triton.testing")

    def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        return 7.0

    class Mark:
        def __init__(self, fn, benchmarks):
            self.fn, self.benchmarks = fn, benchmarks

        def run(self, **kwargs):
            return "ran"

    testing.do_bench, testing.do_bench_cudagraph, testing.Mark = do_bench, do_bench, Mark
    real.testing = testing
    monkeypatch.setitem(sys.modules, "triton", real)
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    monkeypatch.setattr(triton_convention, "_gpu", lambda: True)  # a GPU runner
    assert triton_convention.install() is testing and sys.modules["triton"] is real
    assert testing.do_bench.__wrapped__ is do_bench and testing.do_bench(lambda: None) == 7.0  # nothing recording
    assert Mark(None, []).run() == "ran"
    recorder = capture.Recorder(Path(__file__), Path(__file__).parent)
    monkeypatch.setattr(capture, "ACTIVE", recorder)
    assert testing.do_bench(lambda: None, quantiles=[0.5, 0.2]) == [1.0, 1.0]  # recorded, not run
    assert len(recorder.calls) == 1


DO_BENCH_ON_A_TOY = """
import triton

from runner import devices

toy = devices.get("toy")

if __name__ == "__main__":
    triton.testing.do_bench(lambda: toy.run(50.0))
    triton.testing.do_bench_cudagraph(lambda: toy.run(50.0))
"""


def test_a_do_bench_call_is_timed_as_do_bench_times_it_unless_the_config_says_otherwise(
        tmp_path, monkeypatch):
    # do_bench zeroes a buffer before every call (a cold L2, the call's device time); the worker's
    # default is back-to-back warm calls: a script's do_bench call defaults to cold_cache (GPU
    # review #6), on a device with an L2 (the toy's: each flush a 40 µs kernel of its own)
    from runner import devices
    from runner.worker.child import Worker
    from runner.worker.serve import serve

    from .toy_device import ToyDevice

    toy = ToyDevice()
    toy.l2 = True
    monkeypatch.setattr(devices, "REGISTRY", devices.REGISTRY + (toy,))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench_toy.py").write_text(DO_BENCH_ON_A_TOY)
    worker = Worker("toy")

    def ask(**request) -> dict:
        replies: list[dict] = []
        serve(worker, iter([json.dumps(request)]), replies.append)
        return replies[0]

    cases = ask(cmd="list", dir=str(tmp_path), suite="triton")["benchmarks"]
    assert [c["name"] for c in cases] == ["bench_toy", "bench_toy#2"]
    timed = {}
    for case, cold_cache in ((cases[0], None), (cases[0], False), (cases[1], None)):
        setup = ask(cmd="setup", dir=str(tmp_path), file=case["file"], func=case["func"],
                    name=case["name"], suite="triton", case=case, min_sample_time=0.001,
                    cold_cache=cold_cache)
        assert setup["ok"], setup
        toy.log.clear()
        sample = ask(cmd="sample", count=1, number=2)
        timed[case["name"], cold_cache] = (setup["cold_cache"], toy.log.count("flush"),
                                           sample["samples"][0])
    # do_bench's quantity: each call after a flush, the flush outside the call's events
    assert timed["bench_toy", None] == (True, 2, pytest.approx(50e-6))
    assert timed["bench_toy", False] == (False, 0, pytest.approx(50e-6))  # the config's warm calls
    # do_bench_cudagraph flushes nothing: its calls back to back, as Triton replays them
    assert timed["bench_toy#2", None] == (False, 0, pytest.approx(50e-6))
    worker.close()


def test_nominal_results_and_grid_points_as_triton_shapes_them():
    assert triton_convention.nominal() == 1.0
    assert triton_convention.nominal([0.5]) == 1.0
    assert triton_convention.nominal([0.5, 0.2, 0.8]) == [1.0, 1.0, 1.0]
    assert triton_convention.nominal(None, "all") == [1.0]
    bench = triton_convention.Benchmark(x_names=["M", "N"], x_vals=[(1, 2), 4], line_arg="p", line_vals=["a", "b"],
                                        line_names=["A"], plot_name="g")
    assert grid_points(bench) == [
        ({"M": "1", "N": "2", "p": "A"}, {"M": 1, "N": 2, "p": "a"}), ({"M": "1", "N": "2", "p": "b"}, {"M": 1, "N": 2, "p": "b"}),
        ({"M": "4", "N": "4", "p": "A"}, {"M": 4, "N": 4, "p": "a"}), ({"M": "4", "N": "4", "p": "b"}, {"M": 4, "N": 4, "p": "b"})]


def test_the_keys_that_name_calls_are_those_that_vary_without_repeating_another():
    calls = [Call("f", {}, {"size": "1", "mode": "fwd", "m": "fwd", "eps": "1e-06"}),
             Call("f", {}, {"size": "2", "mode": "fwd", "m": "fwd", "eps": "1e-06"}),
             Call("f", {}, {"size": "1", "mode": "bwd", "m": "bwd", "eps": "1e-06"})]
    assert varying_keys(calls) == ["size", "mode"]
    named = [Call("g", {"sub_label": "a"}, {"n": "1"}), Call("g", {"sub_label": "b"}, {"n": "1"})]
    assert varying_keys(named) == []


# -- torch.utils.benchmark ---------------------------------------------------------------------------
def test_timers_are_named_by_their_labels_or_by_what_tells_their_calls_apart(example, monkeypatch):
    listing = list_suite(str(example / "timer"), "torch-timer")
    cases = {c["name"]: c for c in listing["benchmarks"]}
    assert list(cases) == ["scale[n=256,description=lib]", "scale[n=256,description=ref]",
                           "scale[n=4096,description=lib]", "scale[n=4096,description=ref]",
                           "benchmark_plain[m=256]", "benchmark_plain[m=4096]"]
    assert cases["scale[n=4096,description=lib]"]["params"] == {"n": "4096", "description": "lib"}
    assert listing["errors"] == [] and listing["skipped"] == []
    steps = _steps(monkeypatch)
    for name, expected in (("scale[n=4096,description=lib]", 4096), ("benchmark_plain[m=256]", 256)):
        fn = _prepared(example, "timer", "torch-timer", cases[name]).fn
        steps.clear()
        fn()
        assert steps == [expected], name


def test_a_cpp_timer_is_skipped_and_timers_outside_a_capture_measure_as_usual(tmp_path, monkeypatch):
    import torch.utils.benchmark as benchmark

    from runner.conventions import torch_timer

    torch_timer.install()
    plain = benchmark.Timer(stmt="sum(range(10))").timeit(3)
    assert plain.median != capture.NOMINAL_MS * 1e-3
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmark_cpp.py").write_text(
        "import torch.utils.benchmark as benchmark\n"
        "benchmark.Timer(stmt='x += 1;', setup='int x = 0;', language='c++', label='cpp').timeit(10)\n")
    case = list_suite(str(tmp_path), "torch-timer")["benchmarks"][0]
    with pytest.raises(Skipped, match="C\\+\\+ torch.utils.benchmark.Timer"):
        _prepared(tmp_path, ".", "torch-timer", case)


# -- the whole pipeline -------------------------------------------------------------------------------
@pytest.mark.slow
def test_compare_a_grid_finds_where_the_head_stops_paying(tmp_path):
    """Head: half the work plus a quadratic term, so faster at N ≤ 1024 and much slower at 16384."""
    repo = suite_repo(tmp_path / "repo", EXAMPLE, "kernels.py", "def COST(n):\n    return n\n",
                      "def COST(n):\n    return n // 4 + n * n // 8192\n")
    git(repo, "checkout", "-q", "base")
    (repo / "pyproject.toml").write_text('[tool.perfgate]\nbenchmarks = "triton"\nmax_time = 90\n'
                                         'min_sample_time = 0.002\nprofile = false\n')
    git(repo, "commit", "-qam", "config")
    git(repo, "checkout", "-q", "head")
    git(repo, "merge", "-q", "base", "-m", "config")
    out = tmp_path / "out"
    from runner.cli.main import main

    assert main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out), "--quiet",
                 "--filter", "*provider=Lib*"]) == 0
    from runner import results as results_mod

    doc = results_mod.load(out / "results.json")
    verdicts = {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"]}
    assert verdicts == {GRID[0]: "improvement", GRID[2]: "improvement", GRID[4]: "regression"}
    assert doc["settings"]["suite"] == "triton"
    # what each side timed: do_bench's cold calls asked for (cold_cache "auto"), nothing to flush
    # on a CPU, so back to back; the setting left to the convention
    assert doc["settings"]["cold_cache"] is None
    timed = {b[side]["cold_cache"] for b in doc["benchmarks"] for side in ("base", "head")}
    assert timed == {False}
    assert {b["family"] for b in doc["benchmarks"]} == {"scale-performance"}
    report = (out / "report.md").read_text()
    assert "<summary>Where it stops paying</summary>" in report
    assert ("`scale-performance (provider=Lib)`: head faster for N ≤ 1024 (" in report
            and "slower for N = 16384 (" in report and "crossover between N = 1024 and N = 16384" in report)
    assert '<svg class="sweep"' in (out / "report.html").read_text()


@pytest.mark.slow
def test_run_a_timer_suite_measures_each_timer(tmp_path):
    from runner import results as results_mod
    from runner.cli.main import main

    repo = suite_repo(tmp_path / "repo", EXAMPLE, "kernels.py", "def COST(n):\n    return n\n",
                      "def COST(n):\n    return 2 * n\n")
    out = tmp_path / "out"
    assert main(["run", "--repo", str(repo), "--rev", "base", "--out", str(out), "--max-time", "6", "--quiet",
                 "--benchmarks", str(repo / "timer"), "--filter", "*description=lib*"]) == 0
    doc = results_mod.load(out / "results.json")
    assert doc["settings"]["suite"] == "torch-timer"
    assert sorted(b["name"] for b in doc["benchmarks"]) == ["scale[n=256,description=lib]", "scale[n=4096,description=lib]"]
    assert all(len(b["head"]["samples"]) >= 2 and b["head"]["error"] is None for b in doc["benchmarks"])
    small, large = sorted(doc["benchmarks"], key=lambda b: b["params"]["n"] == "4096")
    assert large["head"]["median"] > small["head"]["median"]  # 16× the loop: the callable timed is the Timer's stmt
