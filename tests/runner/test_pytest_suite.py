"""pytest-benchmark suites as they are: pytest's own collection and run with perfgate's
``benchmark`` fixture (tests/fixtures/suites/pytest_benchmark_example), and one real compare."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runner.pipeline import suites
from runner.conventions import pytest_benchmark as pytest_suite
from runner.conventions.base import Skipped
from runner.worker.child import Worker, list_suite

from .gitrepo import compare_ok, suite_repo

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "pytest_benchmark_example"

NODES = ["benchmarks/test_ops.py::test_sum", "benchmarks/test_ops.py::test_kind[sort]",
         "benchmarks/test_ops.py::test_kind[join]", "benchmarks/test_ops.py::test_pedantic",
         "benchmarks/test_ops.py::test_gpu_only"]


@pytest.fixture
def example(suite_copy):
    return suite_copy(EXAMPLE)


def test_capture_records_the_call_and_returns_its_result():
    bench = pytest_suite.BenchmarkCapture()
    assert bench(pow, 2, 5) == 32
    assert bench.target == (pow, (2, 5), {})
    with pytest.raises(RuntimeError, match="only once"):
        bench(pow, 2, 3)
    pedantic = pytest_suite.BenchmarkCapture()
    assert pedantic.pedantic(sorted, setup=lambda: (([3, 1, 2],), {"reverse": True}), rounds=100) == [3, 2, 1]
    assert pedantic.target == (sorted, ([3, 1, 2],), {"reverse": True})
    plain = pytest_suite.BenchmarkCapture()
    plain.pedantic(max, args=(1, 4), iterations=10)
    assert plain.target == (max, (1, 4), {})
    with pytest.raises(TypeError, match="needs a callable"):
        pytest_suite.BenchmarkCapture()(42)


def test_rootdir_is_the_revision_unless_the_directory_is_elsewhere(tmp_path):
    (tmp_path / "rev" / "benchmarks").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    assert pytest_suite.rootdir(tmp_path / "rev" / "benchmarks", tmp_path / "rev") == (tmp_path / "rev").resolve()
    assert pytest_suite.rootdir(tmp_path / "shared", tmp_path / "rev") == (tmp_path / "shared").resolve()


def test_collect_keeps_the_tests_using_the_fixture_named_by_node_id(example):
    listing = list_suite(example / "benchmarks", "pytest-benchmark")
    assert [c["name"] for c in listing["benchmarks"]] == NODES
    assert listing["benchmarks"][1] == {"name": NODES[1], "file": "test_ops.py", "func": NODES[1],
                                        "params": {"kind": "sort"}, "suite": "pytest-benchmark",
                                        "family": "benchmarks/test_ops.py::test_kind"}
    assert listing["benchmarks"][0]["params"] == {}
    assert listing["errors"] == [] and listing["skipped"] == []


def test_prepare_runs_the_test_with_fixtures_and_times_what_it_benchmarks(example):
    import pbenchlib

    kind = pytest_suite.prepare(example / "benchmarks", NODES[1])
    assert kind.fn.func is pbenchlib.work and kind.fn.args == ("sort",) and kind.fn.keywords == {"repeat": 1}
    assert kind.fn() == pbenchlib.spin(20000)
    pedantic = pytest_suite.prepare(example / "benchmarks", NODES[3])
    assert pedantic.fn.args == ("scale",) and pedantic.fn.keywords == {"repeat": 1}


def test_skipped_failing_and_missing_tests(example):
    with pytest.raises(Skipped, match="test_gpu_only: .*needs a GPU"):
        pytest_suite.prepare(example / "benchmarks", NODES[4])
    (example / "benchmarks" / "test_more.py").write_text(textwrap.dedent("""
        def test_wrong(benchmark):
            assert benchmark(len, "abc") == 4

        def test_unused(benchmark):
            pass
    """))
    with pytest.raises(RuntimeError, match=r"test_wrong failed \(call\)"):
        pytest_suite.prepare(example / "benchmarks", "benchmarks/test_more.py::test_wrong")
    with pytest.raises(RuntimeError, match="never called benchmark"):
        pytest_suite.prepare(example / "benchmarks", "benchmarks/test_more.py::test_unused")
    with pytest.raises(LookupError, match="not a test on this revision"):
        pytest_suite.prepare(example / "benchmarks", "benchmarks/test_more.py::test_gone")


def test_a_file_that_does_not_collect_fails_alone(example):
    (example / "benchmarks" / "test_broken.py").write_text("def test_x(benchmark:\n")
    listing = pytest_suite.collect(example / "benchmarks")
    assert [c["name"] for c in listing["benchmarks"]] == NODES
    assert [e["file"] for e in listing["errors"]] == ["test_broken.py"]
    assert "SyntaxError" in listing["errors"][0]["error"] or "invalid syntax" in listing["errors"][0]["error"]


def test_worker_answers_a_pytest_skip_as_skipped(example):
    worker = Worker("cpu")
    req = {"dir": str(example / "benchmarks"), "file": "test_ops.py", "suite": "pytest-benchmark",
           "min_sample_time": 0.001, "number": 1, "warmup_samples": 1}
    resp = worker.setup({**req, "func": NODES[4], "name": NODES[4]})
    assert resp["ok"] is False and "needs a GPU" in resp["skipped"]


def test_auto_detects_the_example_as_pytest_benchmark():
    assert suites.detect(EXAMPLE, "auto", "benchmarks") == suites.Suite("pytest-benchmark", "benchmarks")


@pytest.mark.slow
def test_compare_a_pytest_benchmark_suite_finds_the_slowed_test(tmp_path):
    repo = suite_repo(tmp_path / "repo", EXAMPLE, 'pbenchlib.py', '"join": 20000', '"join": 60000')
    out = tmp_path / "out"
    # three times the work is decided in seconds; the untouched ones may stop short of a verdict.
    # At 45 s, CI's loaded machine (2026-12-07) gave join too few process pairs: 3.21× [2.25×,
    # 4.58×], p 0.003, lost to the looks' Bonferroni and Benjamini–Hochberg over 4 benchmarks.
    doc = compare_ok(repo, out, max_time=60)
    changes = {b["name"]: b["change"] for b in doc["benchmarks"]}
    join = changes.pop("benchmarks/test_ops.py::test_kind[join]")
    # What the machine was like, for the messages: a failure here on CI is read from its log alone.
    env = doc["environment"]
    seen = {"aslr": (env.get("worker") or {}).get("aslr"),
            "doctor": [c["summary"] for c in (env.get("doctor") or {}).get("checks", []) if c["status"] != "ok"]}
    # 60000 / 20000 iterations: three times the work, +200 %. The lower bound is far below that:
    # on the 2-CPU CI machine, loaded, a +50 % change once came out [+19.4, +95.5] % after 4 pairs.
    assert join["verdict"] == "regression" and join["ci_low"] > 1.5, (join, seen)
    assert set(changes) == set(NODES[:4]) - {"benchmarks/test_ops.py::test_kind[join]"}
    # The other three run byte-identical code, in a revision whose library differs (the slowed
    # test's constant). A false call on them can happen: 1 % per benchmark by design, and more on
    # a loaded VM, where the CI machine has shifted every untouched benchmark of one compare alike:
    # once -2.6 % [-4.5, -0.6] %; once +4.9 % [+1.9, +8.0] % and +5.6 % [+2.4, +8.8] % (load 1.27);
    # once all three, +9.1 %, +6.7 % and +17.2 % [+9.2, +25.9] % (load 1.11). None of these
    # showed here, in 16 compares idle, loaded or with the layout random, nor in the 192 untouched
    # comparisons of evaluation/sensitivity.py's `edit` study (RESULTS_sensitivity.md). So this
    # asserts what must hold: nothing identical is called a change the slowed test's could be
    # mistaken for.
    for name, change in changes.items():
        if change["verdict"] in ("regression", "improvement"):
            assert 1 / 1.5 < change["ratio"] < 1.5 and change["ci_high"] < join["ci_low"], (name, change, seen)
        else:
            assert change["verdict"] in ("unchanged", "inconclusive"), (name, change, seen)
    assert doc["settings"]["suite"] == "pytest-benchmark"
    assert [s["name"] for s in doc["settings"]["skipped"]] == [NODES[4]]
