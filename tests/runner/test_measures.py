"""Peak memory and torch.compile as measures: the worker's measurements (real torch on a CPU, the
simulated CUDA allocator), their comparison over process pairs and its verdicts, the gate, the
report, and — end to end — a compare whose head keeps an extra temporary alive and adds a graph
break, and evaluation/measures.py's smoke run (A/A over 50 benchmarks, injected 5 %, compile cases)."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path

import pytest

from runner import measures, report, gate, results as results_mod
from runner.config import ConfigError, parse_table
from runner.worker import caches, measures as worker_measures
from testkit.fake_cuda import FakeTorch, installed
from testkit.gitrepo import make_repo



def _mem(peak: int, kind: str = "cpu", **extra) -> dict:
    return {"kind": kind, "peak_bytes": peak, "rss_bytes": None, **extra}


# -- the memory comparison --------------------------------------------------------------------------

def test_identical_peaks_in_every_pair_are_unchanged_with_an_interval_of_zero_width():
    change = measures.memory_change([_mem(8 << 20)] * 4, [_mem(8 << 20)] * 4, 0.05)
    assert change["verdict"] == "unchanged"
    assert change["ratio"] == change["ci_low"] == change["ci_high"] == 1.0
    assert change["pairs"] == 4 and change["delta_bytes"] == 0


def test_a_peak_five_percent_larger_in_every_pair_is_a_regression_and_less_is_not():
    base = [_mem(20 << 20)] * 3
    exactly = measures.memory_change(base, [_mem(21 << 20)] * 3, 0.05)  # 21/20: exactly 5 %
    assert exactly["verdict"] == "regression" and exactly["delta_bytes"] == 1 << 20
    below = measures.memory_change(base, [_mem(int(20.9 * 2**20))] * 3, 0.05)
    assert below["verdict"] == "unchanged"  # +4.5 % in every pair: inside ±5 %
    across = measures.memory_change(base, [_mem(int(f * 2**20)) for f in (20.4, 21.6, 20.8)], 0.05)
    assert across["verdict"] == "inconclusive"  # +4 % by the median, the pairs from +2 % to +8 %
    smaller = measures.memory_change([_mem(21 << 20)] * 3, base, 0.05)
    assert smaller["verdict"] == "improvement"


def test_a_change_below_the_floor_is_unchanged_whatever_its_ratio():
    # a call allocating 2 KiB of Python objects on base, 6 KiB on head: 3× larger, far below 64 KiB
    change = measures.memory_change([_mem(2048)] * 4, [_mem(6144)] * 4, 0.05)
    assert change["ratio"] == pytest.approx(3.0, rel=1e-3) and change["verdict"] == "unchanged"


def test_one_odd_process_moves_the_estimate_by_a_rank_not_by_its_size():
    base = [_mem(10 << 20)] * 10
    one_odd = [_mem(10 << 20)] * 9 + [_mem(40 << 20)]  # one process chose a 30 MiB workspace
    change = measures.memory_change(base, one_odd, 0.05)
    assert change["verdict"] == "unchanged" and change["ci_high"] == 1.0
    mostly_more = [_mem(11 << 20)] * 9 + [_mem(10 << 20)]
    change = measures.memory_change(base, mostly_more, 0.05)
    assert change["verdict"] == "regression" and change["ci_level"] == 0.95  # 10 pairs: an order-statistic interval
    # with fewer pairs the interval is their range: the odd one leaves the change undecided
    assert measures.memory_change(base[:4], mostly_more[-4:], 0.05)["verdict"] == "inconclusive"


def test_a_single_pair_or_none_decides_nothing():
    assert measures.memory_change([_mem(1 << 20)], [_mem(4 << 20)], 0.05)["verdict"] == "inconclusive"
    assert measures.memory_change([None, None], [_mem(1 << 20), None], 0.05) is None
    # pairs measured differently on the two sides (a CUDA peak beside a CPU one) are not compared
    assert measures.memory_change([_mem(1 << 20, "cuda")], [_mem(1 << 20)], 0.05) is None


def test_memory_is_measured_in_a_few_pairs_and_only_where_the_budget_affords_it():
    # a cheap call: every pair up to MEMORY_PAIRS, then none
    assert all(measures.memory_due(k, 1e-3, 60.0) for k in range(measures.MEMORY_PAIRS))
    assert not measures.memory_due(measures.MEMORY_PAIRS, 1e-3, 60.0)
    # a 0.24 s pure-Python call traced on a CPU (~4.8 s) needs 48 s left; on CUDA (~0.5 s) 4.8 s
    assert measures.memory_due(0, 0.24, 48.0) and not measures.memory_due(0, 0.24, 47.0)
    assert measures.memory_due(0, 0.24, 5.0, "cuda:0") and not measures.memory_due(0, 0.24, 5.0, "cpu")
    assert measures.memory_due(0, 10.0, float("inf"))
    # nor more than the benchmark's rounds took so far: a 2.4 s call traced (~48 s) after 9.6 s of
    # rounds is not measured even with 800 s left (a x1000 regression took 135 s to its verdict so)
    assert not measures.memory_due(0, 2.4, 800.0, "cpu", rounds_s=9.6)
    assert measures.memory_due(0, 2.4, 800.0, "cuda", rounds_s=9.6)  # one call, ~4.8 s
    assert measures.memory_due(0, 1e-3, 60.0, "cpu", rounds_s=0.02)
    assert not measures.memory_due(0, 1e-3, 60.0, "cpu", rounds_s=0.01)
    assert "longer than the benchmark's timed rounds (9.6 s)" in measures.memory_skipped(2.4, 800.0, "cpu", 9.6)
    # counted over all pairs and both sides: at most the rounds' own seconds in all (~1 s per
    # call: one side's measure ~23 s)
    assert measures.memory_due(1, 1.16, 800.0, "cpu", rounds_s=50.0, spent_s=0.0, sides=2)
    assert not measures.memory_due(1, 1.16, 800.0, "cpu", rounds_s=50.0, spent_s=46.4, sides=2)
    assert measures.memory_due(1, 1.16, 800.0, "cpu", rounds_s=93.0, spent_s=46.4, sides=2)
    assert not measures.memory_due(0, 1.16, 800.0, "cpu", rounds_s=30.0, sides=2)
    assert "(~23.2 s) on each of 2 sides, 46.4 s in all, would take longer than the benchmark's timed rounds (30 s)" \
        in measures.memory_skipped(1.16, 800.0, "cpu", 30.0, sides=2)
    assert "10 % of the 47 s" in measures.memory_skipped(0.24, 47.0)


def test_a_side_is_the_median_of_its_processes():
    side = measures.memory_side([_mem(10, reserved_bytes=100), _mem(30, reserved_bytes=300), None,
                                 _mem(20, reserved_bytes=200)])
    assert side["peak_bytes"] == 20 and side["reserved_bytes"] == 200 and side["processes"] == [10, 30, 20]
    assert measures.memory_side([None]) is None


# -- the compile comparison ---------------------------------------------------------------------------

def _facts(breaks=(), recompiles=(), compile_s=0.1, graphs=1) -> dict:
    return {"graphs": graphs, "compiles": graphs, "compile_s": compile_s, "recompile_s": 0.0,
            "graph_breaks": [dict(b) for b in breaks], "graph_break_count": len(breaks),
            "recompiles": [dict(r) for r in recompiles], "recompile_count": sum(r.get("count", 1) for r in recompiles)}


BREAK = {"frame": "model.py:40", "function": "forward", "reason": "Data-dependent branching", "count": 1}


def test_a_graph_break_that_only_moved_lines_is_not_added_and_a_new_one_is():
    moved = dict(BREAK, frame="model.py:42")  # an edit above it moved it
    new = {"frame": "model.py:57", "function": "forward", "reason": "Unsupported Tensor.item() call", "count": 1}
    change = measures.compile_change([_facts([BREAK])] * 3, [_facts([moved, new], graphs=3)] * 3)
    assert [s["frame"] for s in change["graph_breaks"]["added"]] == ["model.py:57"]
    assert change["graph_breaks"]["removed"] == []
    assert change["graphs"] == {"base": 1, "head": 3}


def test_a_site_seen_in_fewer_than_half_of_the_processes_is_not_the_sides():
    flaky = _facts([BREAK])
    assert measures.consensus_sites([[BREAK], [], [], []]) == []
    assert measures.compile_side([flaky, _facts(), _facts()])["graph_breaks"] == []


def test_compile_time_is_compared_with_an_interval_once_two_pairs_compiled_on_both_sides():
    one = measures.compile_change([_facts(compile_s=1.0)], [_facts(compile_s=1.5)])
    assert one["compile_s"]["ratio"] is None and one["compile_s"]["pairs"] == 1
    three = measures.compile_change([_facts(compile_s=t) for t in (1.0, 1.1, 0.9)],
                                    [_facts(compile_s=t) for t in (1.5, 1.6, 1.4)])
    t = three["compile_s"]
    assert t["pairs"] == 3 and t["ci_low"] < t["ratio"] < t["ci_high"] and t["ci_low"] > 1.0
    assert measures.compile_change([None], [None]) is None


def test_the_hint_names_the_frame_the_reason_and_the_calls_change():
    from runner.hints.evidence import with_compile_hint

    recompile = {"frame": "model.py:10", "function": "forward", "reason": "tensor 'x' size mismatch at index 0",
                 "count": 3}
    change = {"verdict": "regression", "ratio": 1.38,
              "compile": measures.compile_change([_facts()] * 3, [_facts([dict(BREAK, frame="model.py:42")],
                                                                         [recompile])] * 3)}
    profile_hint = {"kind": "recompilation", "confidence": 0.6, "summary": "more compile events", "evidence": {}}
    (hint,) = with_compile_hint([profile_hint], change)
    assert hint["kind"] == "graph_break" and hint["confidence"] == 0.9
    assert hint["summary"].startswith("Head adds 1 graph break at model.py:42 in forward (Data-dependent branching)"
                                      " and 3 recompiles of forward at model.py:10 (tensor 'x' size mismatch")
    assert hint["summary"].endswith("a call is +38.0 %.")


# -- what the worker measures ---------------------------------------------------------------------------

def test_a_call_that_keeps_an_extra_temporary_alive_allocates_twice_the_tensors_at_its_peak():
    import numpy as np
    import torch

    x = torch.randn(256, 1024)  # 1 MiB

    def freed_early():
        a = x * 2
        s = a.sum()
        del a
        b = x * 3
        return s + b.sum()

    def kept():
        a = x * 2
        s = a.sum()
        b = x * 3  # a is still alive: two temporaries at once
        return s + b.sum()

    before = worker_measures.measure_memory(freed_early, "cpu")
    after = worker_measures.measure_memory(kept, "cpu")
    assert before["kind"] == after["kind"] == "cpu"
    assert before["tensor_bytes"] >= 1 << 20 and after["tensor_bytes"] >= 2 << 20
    assert after["tensor_bytes"] - before["tensor_bytes"] == pytest.approx(1 << 20, rel=0.01)
    # Python's own allocations (numpy arrays among them) are counted by tracemalloc
    arr = worker_measures.measure_memory(lambda: np.ones(1 << 18).sum(), "cpu")
    assert arr["python_bytes"] >= 2 << 20 and arr["peak_bytes"] >= arr["python_bytes"]


def test_on_cuda_the_absolute_allocated_and_reserved_peaks_of_one_call_after_the_flush_buffer_is_released():
    fake = FakeTorch()
    with installed(fake):
        fake.allocate(6 << 20)  # the benchmark's inputs
        fake.allocate(100 << 20)  # the timer's L2-flush buffer

        def call():
            fake.allocate(3 << 20)
            fake.free(3 << 20)

        got = worker_measures.measure_memory(call, "cuda", release=lambda: fake.free(100 << 20))
    assert got["kind"] == "cuda" and got["peak_bytes"] == 9 << 20
    assert got["reserved_bytes"] == 10 << 20  # 2 MiB segments; the flush buffer's emptied from the cache
    assert fake.log.index("empty cache") < fake.log.index("reset peak memory")


#: Messages as torch 2.13 logs them (torch._dynamo.symbolic_convert, torch._dynamo.guards).
GRAPH_BREAK = ("Graph break in user code at {root}/model.py:16\nGraph Break Reason: Encountered graph break when "
               "attempting to trace CALL: a function call, e.g. f(x, y):\n\nUnsupported Tensor.item() call with "
               "capture_scalar_outputs=False\n  Explanation: Dynamo does not support tracing `Tensor.item()` with "
               "config.capture_scalar_outputs=False.\n  Hint: Set `torch._dynamo.config.capture_scalar_outputs = "
               "True`\n\nUser code traceback:\n  File \"{root}/model.py\", line 16, in f\n    if y.sum().item() > 0:"
               "\n       ^^^^^^^^^^^^^^^^^^^\n")
DUPLICATE = ("Graph break (user stack suppressed due to duplicate graph break) in user code at {root}/model.py:16\n"
             "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. "
             "f(x, y):\n\nUnsupported Tensor.item() call with capture_scalar_outputs=False\n  Explanation: x")
RECOMPILE = ("Recompiling function torch_dynamo_resume_in_f_at_16 in {root}/model.py:16\n    triggered by the "
             "following guard failure(s):\n    - 1/0: tensor 'y' size mismatch at index 0. expected 8, actual 16")


def test_graph_breaks_and_recompiles_are_read_from_torchs_messages_with_their_frames(tmp_path):
    watch = worker_measures.CompileWatch(str(tmp_path))
    root = str(tmp_path)
    watch._record("torch._dynamo.symbolic_convert.__graph_breaks", GRAPH_BREAK.format(root=root))
    watch._record("torch._dynamo.symbolic_convert.__graph_breaks", DUPLICATE.format(root=root))
    watch._record("torch._dynamo.guards.__recompiles", RECOMPILE.format(root=root))
    watch._record("torch._dynamo.guards.__recompiles", "Recompiling something torch says otherwise")
    (site,) = watch.breaks.values()
    assert site == {"frame": "model.py:16", "count": 2, "function": "f", "code": "if y.sum().item() > 0:",
                    "reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False — Dynamo does not "
                              "support tracing `Tensor.item()` with config.capture_scalar_outputs=False."}
    (recompile,) = watch.recompiles.values()
    assert recompile == {"frame": "model.py:16", "function": "f (resumed after line 16)", "count": 1,
                         "reason": "tensor 'y' size mismatch at index 0. expected 8, actual 16"}


def test_every_worker_process_gets_empty_compile_caches_of_its_own(monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    first = caches.isolate_compile_caches()
    second = caches.isolate_compile_caches()
    try:
        assert first != second and Path(second).is_dir() and not any(Path(second).iterdir())
        import os

        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == second
        assert os.environ["TRITON_CACHE_DIR"].startswith(second)
    finally:
        caches.remove_compile_caches(first)
        caches.remove_compile_caches(second)
    assert not Path(first).exists()


# -- the gate, the document, the report -------------------------------------------------------------------

def _doc(memory_verdict: str | None, time_verdict: str = "unchanged", ratio: float = 1.0) -> dict:
    change = {"ratio": ratio, "ci_low": ratio * 0.99, "ci_high": ratio * 1.01, "p_value": 0.5, "verdict": time_verdict}
    base = results_mod.side([1e-3, 1.01e-3], memory=measures.memory_side([_mem(2 << 20)] * 2))
    head = results_mod.side([1e-3, 1.01e-3], memory=measures.memory_side([_mem(4 << 20)] * 2))
    if memory_verdict:
        change["memory"] = dict(measures.memory_change([_mem(2 << 20)] * 2, [_mem(4 << 20)] * 2, 0.05),
                                verdict=memory_verdict)
    bench = results_mod.benchmark("bench_m", "bench_m.py", base=base, head=head, change=change)
    return results_mod.new_results(repository="o/r", base={"ref": "a", "sha": "a" * 40},
                                   head={"ref": "b", "sha": "b" * 40},
                                   environment={"device": "cpu", "device_name": "x", "torch": None, "cuda": None,
                                                "driver": None, "python": "3", "platform": "l", "cpu": "x",
                                                "telemetry": {"available": False}},
                                   settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 4, "max_time": 10,
                                             "memory_threshold": 0.05, "fail_on_memory_regression": True},
                                   benchmarks=[bench])


def test_a_memory_regression_fails_the_gate_only_where_the_configuration_says_so():
    from bot.app.core import ingest

    doc = results_mod.validate(_doc("regression"))
    assert gate.gate_failures(doc, 0.05, fail_on_memory=False) == []
    assert [b["name"] for b in gate.gate_failures(doc, 0.05, fail_on_memory=True)] == ["bench_m"]
    assert ingest.conclusion(doc, 0.05) == "success"
    assert ingest.conclusion(doc, 0.05, fail_on_memory=True) == "failure"
    assert ingest.conclusion(doc, 0.05, ["bench_m"], fail_on_memory=True) == "success"  # /perf accept covers it
    assert ingest.check_title(doc, "failure") == "1 unchanged, 1 memory regression"


def test_the_report_shows_memory_beside_time_only_where_it_was_measured(monkeypatch):
    md = report.render(_doc("regression"), "md")
    assert "| verdict | peak memory |" in md
    assert "| unchanged | 2.0 MiB → 4.0 MiB (2× larger), regression |" in md
    assert "Memory regression: allocated by one call at its peak" in md
    html = report.render(_doc("regression"), "html")
    assert "<th>peak memory</th>" in html and "2.0 MiB → 4.0 MiB" in html
    monkeypatch.setenv("COLUMNS", "80")  # stacked lines: the change in words
    term = report.render(_doc("regression"), "term")
    assert "2.0 MiB → 4.0 MiB (2× larger), regression" in term
    monkeypatch.setenv("COLUMNS", "140")  # a table: its column
    assert "peak memory" in report.render(_doc("regression"), "term")
    old = _doc(None)
    for b in old["benchmarks"]:
        for side in ("base", "head"):
            b[side].pop("memory")
    assert "peak memory" not in report.render(old, "md")


def test_the_schema_takes_the_new_records_and_refuses_a_verdict_it_does_not_know():
    doc = _doc("regression")
    assert results_mod.validation_errors(doc) == []
    doc["benchmarks"][0]["change"]["memory"]["verdict"] = "huge"
    assert any("'huge'" in e for e in results_mod.validation_errors(doc))


def test_the_configuration_keys_of_memory():
    cfg = parse_table({"memory_threshold": 0.1, "fail_on_memory_regression": True}, "perfgate.toml")
    assert cfg.memory_threshold == 0.1 and cfg.fail_on_memory_regression is True
    with pytest.raises(ConfigError, match="memory_threshold"):
        parse_table({"memory_threshold": 1.5}, "perfgate.toml")
    with pytest.raises(ConfigError, match="fail_on_memory_regression"):
        parse_table({"fail_on_memory_regression": "yes"}, "perfgate.toml")


# -- end to end ---------------------------------------------------------------------------------------------

BASE = {
    "pyproject.toml": """
        [tool.perfgate]
        min_rounds = 8
        pair_rounds = 4
        max_rounds = 8
        fail_on_memory_regression = true
    """,
    "benchmarks/bench_m.py": """
        import torch


        def bench_temporaries(device):
            x = torch.randn(512, 1024)  # 2 MiB
            def call():
                a = x * 2
                s = a.sum()
                del a
                b = x * 3
                return s + b.sum()
            return call


        def g(x):
            y = x * 2
            return y - 1


        cg = torch.compile(g, backend="eager")


        def bench_compiled(device):
            x = torch.randn(64)
            return lambda: cg(x)
    """,
}
#: The same work, but ``a`` stays alive (twice the temporaries at the peak), and ``g`` branches on a
#: tensor's value (a graph break).
HEAD = {"benchmarks/bench_m.py": BASE["benchmarks/bench_m.py"].replace(
    "                del a\n", "").replace(
    "            y = x * 2\n            return y - 1",
    "            y = x * 2\n            if y.sum().item() > 0:\n                return y + 1\n            return y - 1")}
assert HEAD["benchmarks/bench_m.py"].count("item()") == 1 and "del a" not in HEAD["benchmarks/bench_m.py"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    from runner.cli.main import main

    tmp = tmp_path_factory.mktemp("measures")
    repo = make_repo(tmp / "repo", BASE, HEAD)
    out = tmp / "out"
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out", str(out),
                     "--max-time", "60", "--no-profile", "--quiet", "--fail-on-regression"])
    return code, results_mod.load(out / "results.json"), (out / "report.md").read_text(), err.getvalue()


@pytest.mark.slow
def test_a_head_that_keeps_an_extra_temporary_alive_is_a_memory_regression(compared):
    code, doc, md, err = compared
    bench = next(b for b in doc["benchmarks"] if b["name"] == "bench_temporaries")
    memory = bench["change"]["memory"]
    assert memory["verdict"] == "regression" and memory["kind"] == "cpu"
    assert memory["ratio"] == pytest.approx(2.0, rel=0.01)  # two temporaries of x's size at once, not one
    assert memory["pairs"] >= 2 and memory["ci_low"] > 1.05
    assert bench["head"]["memory"]["tensor_bytes"] - bench["base"]["memory"]["tensor_bytes"] == \
        pytest.approx(2 << 20, rel=0.01)
    # fail_on_memory_regression = true in the base's configuration: the gate names it
    assert code == 1 and "memory regression in:" in err and "bench_temporaries" in err.rsplit("in:", 1)[1]
    assert "1 memory regression" in md.splitlines()[1] and ": gate fails" in md.splitlines()[1]


@pytest.mark.slow
def test_a_head_that_adds_an_item_branch_is_named_with_its_frame_and_compile_time_gets_an_interval(compared):
    _, doc, md, _ = compared
    bench = next(b for b in doc["benchmarks"] if b["name"] == "bench_compiled")
    compiled = bench["change"]["compile"]
    (site,) = compiled["graph_breaks"]["added"]
    line = textwrap.dedent(HEAD["benchmarks/bench_m.py"]).splitlines().index("    if y.sum().item() > 0:") + 1
    assert site["frame"] == f"benchmarks/bench_m.py:{line}" and site["function"] == "g"
    assert site["reason"].startswith("Unsupported Tensor.item() call")
    assert site["code"] == "if y.sum().item() > 0:"
    assert compiled["graphs"]["head"] > compiled["graphs"]["base"] == 1
    assert bench["base"]["compile"]["processes"] >= 3 and bench["head"]["compile"]["processes"] >= 3
    assert compiled["compile_s"]["pairs"] >= 3 and compiled["compile_s"]["ci_low"] is not None
    # the sentence opens the benchmark's note when its time verdict needs none (so "Head adds …")
    assert f"ead adds 1 graph break at benchmarks/bench_m.py:{line} in g (Unsupported Tensor.item() call" in md


@pytest.mark.slow
def test_the_evaluation_smoke_has_no_false_memory_verdict_in_fifty_benchmarks(tmp_path):
    """evaluation/measures.py --smoke: A/A over 50 generated benchmarks in fresh worker processes
    (2 process pairs each), 5 % injected, and the compile cases named."""
    from evaluation import measures as evaluation

    raw = tmp_path / "rows.json"
    assert evaluation.main(["--smoke", "--json", str(raw), "--write", str(tmp_path / "RESULTS.md")]) == 0
    rows = json.loads(raw.read_text())
    assert rows["aa"]["comparisons"] == 50 and rows["aa"]["false_verdicts"] == 0
    assert rows["injected"]["found"] == rows["injected"]["comparisons"] > 0
    assert all(c["named"] for c in rows["compile"][0]["cases"])
    assert "| A/A, identical heads | 50 |" in (tmp_path / "RESULTS.md").read_text()


@pytest.mark.parametrize("per_call, measured", [(1e-3, True), (1.0, False)])
def test_a_single_revision_run_measures_memory_only_where_its_budget_affords_it(per_call, measured):
    from runner.pipeline.timing.entries import one_side_entry

    from testkit.sim_workers import SideModel
    from .test_stops import _one_side

    (state,), worker = _one_side({"bench_x": SideModel(per_call, memory=4096)}, max_time=10.0)
    assert worker.measures_taken == [measured]
    head = one_side_entry(state)["head"]
    if measured:
        assert head["memory"]["peak_bytes"] == 4096 and "measure_error" not in head
    else:
        assert "memory" not in head and head["measure_error"].startswith("memory not measured")


def test_an_exact_memory_change_is_decided_by_two_pairs_and_a_large_one_earns_its_second_measure():
    # issue 47: head holds a 64 MB temporary, 16.0 -> 80.0 MiB in every process
    base = [{"kind": "cpu", "peak_bytes": 16 * 2**20}] * 2
    head = [{"kind": "cpu", "peak_bytes": 80 * 2**20}] * 2
    change = measures.memory_change(base, head, 0.05, min_pairs=4)
    assert change["exact"] and change["verdict"] == "regression" and change["ratio"] == 5.0
    # one pair proves nothing about exactness; two that differ are not exact either
    assert (measures.memory_change(base[:1], head[:1], 0.05, min_pairs=4)["verdict"]
            == "inconclusive")
    wobbly = [head[0], {"kind": "cpu", "peak_bytes": 81 * 2**20}]
    assert measures.memory_change(base, wobbly, 0.05, min_pairs=4)["verdict"] == "inconclusive"
    # the rounds' bound, which held the second measure back, is lifted once a change is seen
    assert not measures.memory_due(1, 0.05, 100.0, "cpu", rounds_s=0.5, spent_s=1.0)
    assert measures.memory_due(1, 0.05, 100.0, "cpu", rounds_s=0.5, spent_s=1.0, change_seen=True)
    assert not measures.memory_due(2, 0.05, 100.0, "cpu", rounds_s=0.5, spent_s=2.0,
                                   change_seen=True)
    # the budget's share still holds
    assert not measures.memory_due(1, 0.05, 5.0, "cpu", rounds_s=0.5, spent_s=1.0, change_seen=True)


def test_a_memory_change_under_the_floor_is_said_not_silent():
    # issue 47: +200 % of a 10 KiB call is under the 64 KiB floor: no verdict, but a word
    from runner.report.measures import memory_note

    change = measures.memory_change([{"kind": "cpu", "peak_bytes": 10 * 1024}] * 3,
                                    [{"kind": "cpu", "peak_bytes": 30 * 1024}] * 3, 0.05)
    assert change["verdict"] == "unchanged"
    note = memory_note({"name": "b", "change": {"verdict": "unchanged", "memory": change}})
    assert "3× larger" in note and "under the 64" in note
    same = measures.memory_change([{"kind": "cpu", "peak_bytes": 10 * 1024}] * 3,
                                  [{"kind": "cpu", "peak_bytes": 10 * 1024}] * 3, 0.05)
    assert memory_note({"name": "b", "change": {"verdict": "unchanged", "memory": same}}) is None
