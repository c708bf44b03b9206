"""asv suites as they are: naming and params (pure), discovery and set-up in the worker, suite
detection in the parent, and one real compare of an asv suite (tests/fixtures/suites/asv_example)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from runner import results as results_mod
from runner.config import Config, parse_table
from runner.errors import ConfigError, UserError
from runner.pipeline import suites
from runner.conventions import asv as asv_suite
from runner.conventions.asv_conf import read_asv_conf
from runner.conventions.asv_names import (case_name, kind_of, labelled_combos, module_name,
                                          normalize_params)
from runner.conventions.base import Skipped
from runner.selection import matches
from runner.worker.child import Worker, list_suite

from .gitrepo import compare_ok, suite_repo

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "asv_example"


# -- pure helpers --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kind", [
    ("time_sort", "time"), ("TimeSort", "time"), ("Time_x", "time"), ("timesort", None),
    ("peakmem_list", "peakmem"), ("PeakMemList", "peakmem"), ("mem_x", "mem"), ("track_loss", "track"),
    ("timeraw_import", "timeraw"), ("setup", None), ("Timer", None),
])
def test_kind_of_follows_asv_name_patterns(name, kind):
    assert kind_of(name) == kind


def test_params_as_asv_reads_them():
    assert normalize_params([1, 2], []) == ([[1, 2]], ["param1"])
    assert normalize_params([[1, 2], ["a"]], ["n"]) == ([[1, 2], ["a"]], ["n", "param2"])
    assert normalize_params([[1]], ["n", "extra"]) == ([[1]], ["n"])
    assert normalize_params([], []) == ([], [])
    with pytest.raises(TypeError, match="params must be a list"):
        normalize_params("12", [])
    with pytest.raises(TypeError, match="param_names"):
        normalize_params([1], "n")


def test_names_use_stable_labels_in_product_order():
    import torch
    from torch.nn.functional import gelu

    params, names = normalize_params([[torch.float32, torch.bfloat16], [gelu], [None, "x"]],
                                     ["dtype", "act", "opt"])
    combos = labelled_combos(params, names)
    assert [case_name("m.C.time_f", labels) for labels, _ in combos] == [
        "m.C.time_f(torch.float32, gelu, None)", "m.C.time_f(torch.float32, gelu, x)",
        "m.C.time_f(torch.bfloat16, gelu, None)", "m.C.time_f(torch.bfloat16, gelu, x)"]
    assert combos[3][1] == (torch.bfloat16, gelu, "x")
    assert combos[0][0] == {"dtype": "torch.float32", "act": "gelu", "opt": "None"}
    assert labelled_combos([], []) == [({}, ())]
    assert case_name("time_x", {}) == "time_x"


def test_equal_labels_are_numbered_as_asv_does():
    class Opaque:
        pass

    a, b = Opaque(), Opaque()
    labels = [labels["p"] for labels, _ in labelled_combos([[a, b, 1, 1]], ["p"])]
    assert labels == ["Opaque#0", "Opaque#1", "1 (0)", "1 (1)"]


def test_module_names_from_files():
    assert module_name("benchmarks", "arith.py") == "benchmarks.arith"
    assert module_name("benchmarks", "nested/strings.py") == "benchmarks.nested.strings"
    assert module_name("benchmarks", "nested/__init__.py") == "benchmarks.nested"
    assert module_name("benchmarks", "__init__.py") == "benchmarks"


def test_filter_glob_matches_asv_names_without_params():
    assert matches("arith.Scale.time_scale(1, float)", "*.time_scale")
    assert not matches("arith.Scale.time_scale(1, float)", "*.time_sort")


# -- worker side: the example suite ----------------------------------------------------------------
@pytest.fixture
def example(suite_copy):
    return suite_copy(EXAMPLE)


def test_collect_lists_the_suite_as_asv_names_it(example):
    listing = list_suite(example / "benchmarks", "asv")
    names = [c["name"] for c in listing["benchmarks"]]
    assert names == ["arith.time_sum", "arith.Scale.time_scale(1, float)", "arith.Scale.time_scale(1, complex)",
                     "arith.Scale.time_scale(2, float)", "arith.Scale.time_scale(2, complex)",
                     "arith.Sorting.peakmem_sort", "arith.Sorting.time_sort", "nested.strings.time_join(3)"]
    by_name = {c["name"]: c for c in listing["benchmarks"]}
    assert by_name["arith.time_sum"]["timeout"] == 120.0
    assert "timeout" not in by_name["arith.Sorting.time_sort"]
    assert by_name["nested.strings.time_join(3)"] == {
        "name": "nested.strings.time_join(3)", "file": "nested/strings.py", "func": "time_join",
        "params": {"param1": "3"}, "suite": "asv", "family": "nested.strings.time_join"}
    assert by_name["arith.Scale.time_scale(2, complex)"]["params"] == {"factor": "2", "kind": "complex"}
    assert by_name["arith.Sorting.peakmem_sort"]["measure"] == "memory"
    assert listing["errors"] == []
    assert listing["skipped"] == []


def test_prepare_runs_setups_with_params_and_setup_cache(example):
    prepared = asv_suite.prepare(example / "benchmarks", "arith.py", "Sorting.time_sort", "arith.Sorting.time_sort")
    prepared.fn()  # time_sort asserts that setup got setup_cache's value, then the benchmark got it too
    assert prepared.fn.args == (list(range(1000, 0, -1)),)
    scale = asv_suite.prepare(example / "benchmarks", "arith.py", "Scale.time_scale", "arith.Scale.time_scale(2, float)")
    assert scale.fn.args == (2, "float") and scale.fn.func.__self__.factor == 2
    join = asv_suite.prepare(example / "benchmarks", "nested/strings.py", "time_join", "nested.strings.time_join(3)")
    import benchmarks.nested.strings as strings

    assert strings.CALLS == [(3,)]  # the module-level setup, with the case's values
    join.teardown()


def test_not_implemented_in_setup_skips_that_combination_only(example):
    with pytest.raises(Skipped, match=r"time_scale\(2, complex\): setup raised NotImplementedError: complex scaling"):
        asv_suite.prepare(example / "benchmarks", "arith.py", "Scale.time_scale", "arith.Scale.time_scale(2, complex)")
    asv_suite.prepare(example / "benchmarks", "arith.py", "Scale.time_scale", "arith.Scale.time_scale(1, complex)")


def test_worker_answers_a_skip_as_skipped_not_failed(example):
    worker = Worker("cpu")
    req = {"dir": str(example / "benchmarks"), "file": "arith.py", "func": "Scale.time_scale", "suite": "asv",
           "min_sample_time": 0.001, "number": 1, "warmup_samples": 1}
    skipped = worker.setup({**req, "name": "arith.Scale.time_scale(2, complex)"})
    assert skipped["ok"] is False and "NotImplementedError" in skipped["skipped"]
    ran = worker.setup({**req, "name": "arith.Scale.time_scale(1, float)"})
    assert ran["number"] == 1 and worker.sample({"count": 2})["samples"][0] > 0


def test_unknown_case_is_a_lookup_error_naming_it(example):
    with pytest.raises(LookupError, match=r"time_scale\(3, float\) is not among the params"):
        asv_suite.prepare(example / "benchmarks", "arith.py", "Scale.time_scale", "arith.Scale.time_scale(3, float)")
    with pytest.raises(LookupError, match="time_gone is not defined in arith.py"):
        asv_suite.prepare(example / "benchmarks", "arith.py", "time_gone", "arith.time_gone")


def test_a_broken_module_fails_alone_and_asv_attributes_are_honoured(tmp_path, monkeypatch):
    bench = tmp_path / "suite" / "benchmarks"
    bench.mkdir(parents=True)
    (bench / "good.py").write_text(textwrap.dedent("""
        def skip(func):
            func.skip_benchmark = True
            return func

        def time_a(n):
            pass
        time_a.params = [1, 2]
        time_a.skip_params = [(2,)]

        @skip
        def time_skipped():
            pass

        def time_renamed():
            pass
        time_renamed.benchmark_name = "custom.time_other"

        def track_value():
            return 1

        class Abstract:  # no benchmarks: never instantiated
            def __init__(self, needed):
                pass
    """))
    (bench / "broken.py").write_text("def time_x(:\n")
    monkeypatch.syspath_prepend(str(tmp_path / "suite"))
    listing = asv_suite.collect(bench)
    assert [c["name"] for c in listing["benchmarks"]] == ["good.time_a(1)", "custom.time_other", "good.track_value"]
    assert [(s["name"], s["reason"]) for s in listing["skipped"]] == [("good.time_a(2)", "skip_params")]
    assert len(listing["errors"]) == 1 and listing["errors"][0]["file"] == "broken.py"
    assert "SyntaxError" in listing["errors"][0]["error"]


# -- parent side: which suite -----------------------------------------------------------------------
def test_suite_detection(tmp_path):
    root = tmp_path / "repo"
    (root / "benchmarks").mkdir(parents=True)
    assert suites.detect(root, "auto", "benchmarks") == suites.Suite("perfgate", "benchmarks")
    (root / "benchmarks" / "test_ops.py").write_text("def test_add(\n    x,\n    benchmark):\n    benchmark(sum, [1])\n")
    assert suites.detect(root, "auto", "benchmarks").kind == "pytest-benchmark"
    (root / "benchmarks" / "bench_x.py").write_text("")
    assert suites.detect(root, "auto", "benchmarks").kind == "perfgate"
    (root / "asv_bench").mkdir()
    (root / "asv_bench" / "asv.conf.json").write_text('{"benchmark_dir": "benchmarks", // c\n}')
    assert suites.detect(root, "auto", "benchmarks") == suites.Suite("asv", "asv_bench/benchmarks")
    assert suites.detect(root, "perfgate", "benchmarks") == suites.Suite("perfgate", "benchmarks")
    shutil.copy(EXAMPLE / "asv.conf.json", root / "asv.conf.json")
    assert suites.detect(root, "asv", "benchmarks") == suites.Suite("asv", "benchmarks")
    (root / "asv.conf.json").write_text('{"benchmark_dir": "../../etc"}')
    with pytest.raises(UserError, match="outside the repository"):
        suites.detect(root, "auto", "benchmarks")
    (root / "asv.conf.json").write_text('{"benchmark_dir": ')
    with pytest.raises(UserError, match="asv.conf.json: not valid JSON"):
        suites.detect(root, "auto", "benchmarks")


def test_suite_of_a_directory_given_as_it_is(tmp_path):
    assert suites.detect_in(EXAMPLE / "benchmarks", "auto") == "asv"  # asv.conf.json beside it
    assert suites.detect_in(EXAMPLE / "benchmarks", "perfgate") == "perfgate"
    assert suites.detect_in(EXAMPLE.parent / "pytest_benchmark_example" / "benchmarks", "auto") == "pytest-benchmark"
    assert suites.detect_in(tmp_path, "auto") == "perfgate"


def test_asv_conf_comments_and_trailing_commas_but_not_inside_strings():
    conf = read_asv_conf('{"a": "http://x//y", /* c */ "b": [1, 2,], "c": "1,]"}', "asv.conf.json")
    assert conf == {"a": "http://x//y", "b": [1, 2], "c": "1,]"}


def test_suite_config_key():
    assert Config().suite == "auto"
    assert parse_table({"suite": "asv"}, "pyproject.toml").suite == "asv"
    with pytest.raises(ConfigError, match="suite must be one of auto, asv, command, pytest-benchmark, perfgate, triton, torch-timer"):
        parse_table({"suite": "airspeed"}, "pyproject.toml")


def test_skipped_note_names_each_skip_with_its_reason():
    from runner.report.view import skipped_note

    assert skipped_note({}) is None and skipped_note({"skipped": []}) is None
    many = [{"name": f"m.time_{i}", "reason": "skip_params"} for i in range(12)]
    note = skipped_note({"skipped": many}, limit=2)
    assert note == "12 benchmark(s) skipped, not measured: m.time_0 (skip_params); m.time_1 (skip_params); and 10 more."


# -- the whole pipeline on an asv suite -------------------------------------------------------------
@pytest.mark.slow
def test_compare_an_asv_suite_finds_the_slowed_benchmark(tmp_path):
    repo = suite_repo(tmp_path / "repo", EXAMPLE, 'asvlib.py', '"sort": 20000', '"sort": 30000')
    out = tmp_path / "out"
    doc = compare_ok(repo, out, max_time=60)  # +50 % is decided in seconds; the rest may stop short
    verdicts = {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"]}
    assert verdicts.pop("arith.Sorting.time_sort") == "regression"
    assert verdicts.pop("arith.Sorting.peakmem_sort") in ("unchanged", "inconclusive")  # asv's peakmem, run now
    assert set(verdicts) == {"arith.time_sum", "arith.Scale.time_scale(1, float)", "arith.Scale.time_scale(1, complex)",
                             "arith.Scale.time_scale(2, float)", "nested.strings.time_join(3)"}
    # Byte-identical code in a revision whose library differs (the slowed benchmark's constant):
    # never a change the gate acts on (5 %) nor one the slowed benchmark's could be taken for. A
    # small false call can happen on a loaded machine, as in test_pytest_suite.py: once, load 2.08,
    # arith.time_sum -2.1 % [-3.0, -1.2] % beside time_sort's +49.9 % [+49.0, +50.8] %.
    sort = next(b["change"] for b in doc["benchmarks"] if b["name"] == "arith.Sorting.time_sort")
    for name, verdict in verdicts.items():
        if verdict not in ("unchanged", "inconclusive"):
            change = next(b["change"] for b in doc["benchmarks"] if b["name"] == name)
            assert verdict in ("regression", "improvement"), (name, change)
            assert 1 / 1.05 < change["ratio"] < 1.05, (name, change)
            assert change["ci_high"] < sort["ci_low"], (name, change)
    assert doc["settings"]["suite"] == "asv"
    skipped = {s["name"]: s["reason"] for s in doc["settings"]["skipped"]}
    assert set(skipped) == {"arith.Scale.time_scale(2, complex)"}
    assert "NotImplementedError" in skipped["arith.Scale.time_scale(2, complex)"]
    assert "skipped" in (out / "report.md").read_text()


@pytest.mark.slow
def test_run_an_asv_suite_lists_skips_apart(tmp_path):
    from runner.cli.main import main

    repo = suite_repo(tmp_path / "repo", EXAMPLE, "asvlib.py", '"sort": 20000', '"sort": 30000')
    out = tmp_path / "out"
    assert main(["run", "--repo", str(repo), "--rev", "head", "--out", str(out), "--max-time", "8",
                 "--filter", "*.time_scale", "--quiet"]) == 0
    doc = results_mod.load(out / "results.json")
    assert sorted(b["name"] for b in doc["benchmarks"]) == [
        "arith.Scale.time_scale(1, complex)", "arith.Scale.time_scale(1, float)", "arith.Scale.time_scale(2, float)"]
    assert all(len(b["head"]["samples"]) >= 2 and b["head"]["error"] is None for b in doc["benchmarks"])
    assert [s["name"] for s in doc["settings"]["skipped"]] == ["arith.Scale.time_scale(2, complex)"]
    assert doc["settings"]["suite"] == "asv"
    assert "1 benchmark(s) skipped, not measured: arith.Scale.time_scale(2, complex)" in (out / "report.md").read_text()
