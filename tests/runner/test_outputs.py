"""Base's output against head's (runner.outputs.verdict, pure; runner.worker.outputs summarises; the
protocol's check of a summary; the gate, the report and results.json's record; end to end)."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap

import pytest

from runner import gate, results as results_mod
from runner.config import ConfigError, parse_table
from runner.outputs.summary import (EXACT_MAX, SAMPLES, OutputReply, OutputRequest, check_summary,
                                   sample_indices)
from runner.outputs.verdict import (carried_precision, compare_leaf, output_due, output_record,
                                    tolerance)
from runner.protocol import ProtocolError
from runner.report.outputs import output_note, verdict_text
from runner.report.view import gate_sentence
from bot.app.core.ingest import title_counts
from testkit.gitrepo import make_repo

torch = pytest.importorskip("torch")
from runner.worker.outputs import seed_all, summarize  # noqa: E402  (torch first)


def _leaf(values, dtype="float32", path="", **extra) -> dict:
    return {"path": path, "dtype": dtype, "shape": [len(values)], "device": "cpu",
            "n": len(values), "values": list(values), **extra}


def _summary(*leaves, skipped=()) -> dict:
    return {"leaves": list(leaves), "skipped": list(skipped), "truncated": False}


def _record(base_fn, head_fn, calls: int = 2) -> dict:
    """The record of one pair, summarised by the worker's own code, in-process."""
    seed_all(7)
    base = [summarize(base_fn()) for _ in range(calls)]
    seed_all(7)
    head = [summarize(head_fn())]
    return output_record([(base, head)])


# -- the pure comparison ----------------------------------------------------------------------
def test_the_tolerance_is_by_dtype_and_narrows_with_the_elements_compared():
    assert tolerance("float32", 1) == pytest.approx(1.05e-3, rel=0.01)
    assert tolerance("float32", 4096) < tolerance("float32", 1024) < tolerance("float32", 1)
    assert tolerance("float64", 1) < 1e-11 and tolerance("bfloat16", 1) > tolerance("float16", 1)


def test_identical_leaves_are_the_same_and_integers_are_exact():
    assert compare_leaf(_leaf([1.0, 2.0]), _leaf([1.0, 2.0])).status == "same"
    d = compare_leaf(_leaf([1, 2, 3], "int64"), _leaf([1, 2, 4], "int64"))
    assert d.status == "changed" and d.differing == 1 and d.max_abs == 1
    assert compare_leaf(_leaf([True], "bool"), _leaf([False], "bool")).status == "changed"


def test_a_float_moved_by_rounding_is_the_same_and_by_a_lower_precision_is_not():
    base = [float(i % 7) - 3.0 + 0.123456 for i in range(1000)]
    ulps = [x * (1 + 3e-7) for x in base]
    half = [x * (1 + 4e-4 * ((i % 3) - 1)) for i, x in enumerate(base)]
    assert compare_leaf(_leaf(base), _leaf(ulps)).status == "same"
    d = compare_leaf(_leaf(base), _leaf(half))
    assert d.status == "changed" and d.err > tolerance("float32", 1000)


def test_cancellation_in_one_element_is_judged_against_the_outputs_scale():
    base = [100.0, -50.0, 1e-4]  # the last element is what is left of cancelled terms
    head = [100.0, -50.0, 1e-4 + 2e-5]  # 20 % of that element, 3e-7 of the output's scale
    d = compare_leaf(_leaf(base), _leaf(head))
    assert d.status == "same" and d.max_rel == pytest.approx(0.2)


def test_the_precision_base_carries_sets_the_tolerance_and_whole_numbers_stay_exact():
    a, b = torch.randn(64, 256).bfloat16(), torch.randn(256, 64).bfloat16()
    base = (a @ b).float()  # bfloat16 work, a float32 output
    head = (a[:, :128] @ b[:128] + a[:, 128:] @ b[128:]).float()  # reordered in bfloat16
    values = summarize(base)["leaves"][0]["values"]
    assert carried_precision("float32", values) == "bfloat16"
    assert _record(lambda: base, lambda: head)["verdict"] == "same"
    assert carried_precision("float32", [1.0, 2.0, 3.0]) == "float32"  # counts
    assert carried_precision("float64", [0.1]) == "float64"
    assert carried_precision("float64", [float(torch.tensor(0.1))]) == "float32"
    full = torch.randn(64, 64)
    assert _record(lambda: full @ full, lambda: (full.bfloat16() @ full.bfloat16()).float())[
        "verdict"] == "changed"  # base's values are float32's: bfloat16 work is a change


def test_dtype_shape_device_and_structure_changes_are_named():
    base = _summary(_leaf([1.0, 2.0]), _leaf([3.0], path="[1]"))
    head = _summary(_leaf([1.0, 2.0], dtype="float16", device="cuda"))
    record = output_record([([base, base], [head])])
    assert record["verdict"] == "changed"
    text = " ".join(record["notes"])
    assert "dtype float32 → float16" in text and "device cpu → cuda" in text
    assert "[1]: only on base" in text
    shape = _summary({**_leaf([1.0, 2.0]), "shape": [2, 1]})
    assert "shape 2 → 2×1" in output_record([([_summary(_leaf([1.0, 2.0]))], [shape])])["notes"][0]


def test_none_and_objects_are_skipped_and_counted_and_nothing_comparable_is_not_compared():
    none = _summary(skipped=[{"path": "", "type": "NoneType"}])
    record = output_record([([none, none], [none])])
    assert record["verdict"] == "not_compared" and record["skipped_leaves"] == 1
    assert "None" in record["reason"]
    record = output_record(["base: ValueError: boom \x00\ud800"])
    assert record["verdict"] == "not_compared" and "boom" in record["reason"]
    assert "\x00" not in record["reason"] and "\ud800" not in record["reason"]
    assert output_record([])["verdict"] == "not_compared"


def test_base_spread_widens_the_tolerance_and_is_reported_never_hidden():
    base1 = _leaf([1.0 + i for i in range(100)])
    base2 = _leaf([(1.0 + i) * (1 + 2e-4) for i in range(100)])  # atomics-like spread
    head = _leaf([(1.0 + i) * (1 - 2e-4) for i in range(100)])
    record = output_record([([_summary(base1), _summary(base2)], [_summary(head)])])
    assert record["verdict"] == "same" and record["nondeterminism"]["spread"] > 1e-4
    assert "nondeterminism" in output_note({"output": record, "change": {"verdict": "unchanged"}})
    without = output_record([([_summary(base1), _summary(base1)], [_summary(head)])])
    assert without["verdict"] == "changed" and without["nondeterminism"]["spread"] == 0


def test_a_leaf_that_varies_between_two_base_calls_is_not_compared_with_the_reason():
    one, two = _summary(_leaf([1.0, 2.0])), _summary(_leaf([1.5, 2.5]))
    record = output_record([([one, two], [one])])
    assert record["verdict"] == "not_compared" and record["nondeterminism"]["varying_leaves"] == 1
    assert "varies between two base calls" in record["reason"]
    zeros, ones = _summary(_leaf([0.0, 0.0])), _summary(_leaf([1.0, 1.0]))
    assert output_record([([zeros, ones], [zeros])])["nondeterminism"]["spread"] == 1.0
    ints = (_summary(_leaf([1], "int64")), _summary(_leaf([2], "int64")))
    assert output_record([(list(ints), [ints[0]])])["verdict"] == "not_compared"


def test_any_changed_pair_makes_the_benchmark_changed_with_its_figures():
    same = (_summary(_leaf([1.0, 2.0])),)
    moved = _summary(_leaf([1.0, 4.0]))
    record = output_record([([same[0]], [same[0]]), ([same[0]], [moved]), "head: died"])
    assert record["verdict"] == "changed" and record["changed_pairs"] == 1 and record["pairs"] == 2
    assert record["max_abs_diff"] == 2.0 and record["max_rel_diff"] == 1.0
    assert record["share_changed"] == 0.5


def test_output_calls_are_asked_for_only_when_they_fit():
    assert output_due(0.01, 1.0) and not output_due(1.0, 2.0) and output_due(None, 0.1)
    assert output_due(0.01, 1.0, pairs_done=20)  # a fast benchmark: every pair
    assert output_due(1.0, 60.0, pairs_done=2) and not output_due(1.0, 60.0, pairs_done=3)


# -- the summaries, the worker's own code -----------------------------------------------------
def test_a_summary_holds_small_tensors_whole_and_samples_large_ones_and_crosses_json():
    value = (torch.arange(6).reshape(2, 3), {"loss": torch.tensor(0.5), "n": 3}, None,
             torch.randn(EXACT_MAX + 1))
    s = summarize(value)
    paths = [leaf["path"] for leaf in s["leaves"]]
    assert paths == ["[0]", "[1]['loss']", "[1]['n']", "[3]"]
    assert s["leaves"][0]["values"] == [0, 1, 2, 3, 4, 5] and s["leaves"][0]["dtype"] == "int64"
    big = s["leaves"][3]
    assert "values" not in big and len(big["samples"]) == SAMPLES and len(big["blocks"]) == 256
    assert s["skipped"] == [{"path": "[2]", "type": "NoneType"}]
    reply = OutputReply.from_json(json.loads(json.dumps(OutputReply((s,)).to_json())))
    assert reply.summaries[0]["leaves"] == s["leaves"]
    assert sample_indices(10**9) == sample_indices(10**9)
    assert len(set(sample_indices(5000))) == SAMPLES
    nan = summarize(torch.tensor([float("nan"), float("inf"), 1.0]))["leaves"][0]
    assert nan["values"] == ["nan", "inf", 1.0]


def test_a_reply_that_breaks_the_summarys_form_is_refused_naming_the_field():
    good = _summary(_leaf([1.0]))
    with pytest.raises(ProtocolError, match="shape"):
        check_summary(_summary({**_leaf([1.0]), "shape": ["x"]}))
    with pytest.raises(ProtocolError, match="values"):
        check_summary(_summary(_leaf([1.0] * (EXACT_MAX + 1))))
    with pytest.raises(ProtocolError, match="summaries"):
        OutputReply.from_json({"summaries": [good] * 9})
    assert OutputRequest.from_json({"calls": 99}).calls == 4


def test_reordered_sums_and_nondeterministic_reductions_are_the_same():
    x = torch.randn(65536)
    for other in (lambda: x.flip(0).sum(), lambda: x.view(256, 256).sum(1).sum(),
                  lambda: x[torch.randperm(65536)].sum(), lambda: x.double().sum().float()):
        assert _record(lambda: x.sum(), other)["verdict"] == "same"
    idx, src = torch.randint(0, 64, (20000,)), torch.randn(20000, 32)
    perm = torch.randperm(20000)
    base = lambda: torch.zeros(64, 32).index_add_(0, idx, src)  # noqa: E731
    head = lambda: torch.zeros(64, 32).index_add_(0, idx[perm], src[perm])  # noqa: E731
    assert _record(base, head)["verdict"] == "same"


def test_lower_precision_a_dropped_term_skipped_work_and_a_dtype_change_are_caught():
    a, b, c = torch.randn(256, 256), torch.randn(256, 256), torch.randn(256)
    full = lambda: a @ b + c  # noqa: E731

    def half_rows():
        out = a @ b + c
        out[128:] = 0
        return out

    for head in (lambda: (a.half() @ b.half()).float() + c, lambda: a @ b,
                 lambda: (a.bfloat16() @ b.bfloat16()).float() + c, half_rows,
                 lambda: (a @ b + c).double()):
        record = _record(full, head)
        assert record["verdict"] == "changed", record


def test_the_worker_seeds_the_inputs_and_answers_the_output_request(tmp_path):
    from runner.worker.child import Worker

    (tmp_path / "bench_r.py").write_text(
        "import random\nimport torch\n"
        "def bench_r(device):\n"
        "    x = torch.randn(8)  # no seed of its own\n"
        "    return lambda: (x * random.random() + torch.rand(8), None)\n")
    request = {"dir": str(tmp_path), "file": "bench_r.py", "func": "bench_r", "name": "bench_r",
               "suite": "perfgate", "min_sample_time": 0.001, "warmup_samples": 1, "number": 2}
    answers = []
    for _ in range(2):  # two processes' worth: a fresh worker each, as base and head
        worker = Worker("cpu")
        assert worker.setup(request).get("number") == 2
        worker.sample({"cmd": "sample", "count": 3})  # timed calls move every generator
        answers.append(OutputReply.from_json(worker.output(OutputRequest(99, 2).to_json())))
    (b1, b2), (h1, _) = (a.summaries for a in answers)
    assert b1["leaves"] == b2["leaves"] == h1["leaves"] and b1["skipped"][0]["type"] == "NoneType"
    assert output_record([([b1, b2], [h1])])["verdict"] == "same"


# -- the gate, the report, the configuration --------------------------------------------------
def _doc(verdict: str, output: str | None, **settings) -> dict:
    bench = results_mod.benchmark("b", "f.py", base=results_mod.side([1.0]),
                                  head=results_mod.side([0.5]),
                                  change=results_mod.change(verdict, ratio=0.5),
                                  output=None if output is None else {"verdict": output,
                                                                      "max_abs_diff": 0.25,
                                                                      "max_rel_diff": 0.1,
                                                                      "share_changed": 0.5})
    return {"benchmarks": [bench], "settings": {"fail_threshold": 0.05, **settings}}


def test_the_gate_fails_on_a_changed_result_only_when_asked_and_the_report_always_says_it():
    doc = _doc("improvement", "changed")
    assert gate.gate_failures(doc, 0.05, False) == []
    assert gate.gate_failures(doc, 0.05, False, fail_on_output=True) == doc["benchmarks"]
    bench = doc["benchmarks"][0]
    assert verdict_text(bench) == "improvement · changes the result"
    assert "faster, but not computing the same thing" in output_note(bench)
    assert gate_sentence(doc) == "1 benchmark changing the result: gate passes"
    on = _doc("improvement", "changed", fail_on_output_change=True)
    assert gate_sentence(on) == "1 benchmark changing the result: gate fails"
    assert verdict_text(_doc("improvement", "same")["benchmarks"][0]) == "improvement"
    assert gate_sentence(_doc("improvement", None)) == "1 improvement: gate passes"
    assert gate_sentence(_doc("improvement", "same")) == "1 improvement: gate passes"
    assert title_counts({"improvement": 1}, doc["benchmarks"]) == "1 changing the result"
    same = _doc("improvement", "same")["benchmarks"]
    assert title_counts({"improvement": 1}, same) == "1 improvement"


def test_the_apps_check_run_fails_on_a_changed_result_where_the_base_configuration_says_so():
    from bot.app.core import ingest

    assert ingest.conclusion(_doc("improvement", "changed"), 0.05) == "success"
    assert ingest.conclusion(_doc("improvement", "changed", fail_on_output_change=True),
                             0.05) == "failure"


def test_the_schema_takes_the_output_record_and_the_key_is_a_boolean():
    record = output_record([([_summary(_leaf([1.0]))], [_summary(_leaf([2.0]))])])
    bench = results_mod.benchmark("b", "f.py", base=results_mod.side([1e-3, 1e-3]),
                                  head=results_mod.side([1e-3, 1e-3]),
                                  change=results_mod.change("unchanged", ratio=1.0), output=record)
    doc = results_mod.new_results(
        repository="o/r", base={"ref": "a", "sha": "a" * 40}, head={"ref": "b", "sha": "b" * 40},
        environment={"device": "cpu", "device_name": "x", "torch": None, "cuda": None,
                     "driver": None, "python": "3", "platform": "l", "cpu": "x",
                     "telemetry": {"available": False}},
        settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 4, "max_time": 10,
                  "fail_on_output_change": True}, benchmarks=[bench])
    assert results_mod.validation_errors(doc) == []
    doc["benchmarks"][0]["output"]["verdict"] = "different"
    assert any("'different'" in e for e in results_mod.validation_errors(doc))
    assert parse_table({"fail_on_output_change": True}, "perfgate.toml").fail_on_output_change
    with pytest.raises(ConfigError, match="fail_on_output_change"):
        parse_table({"fail_on_output_change": "yes"}, "perfgate.toml")


# -- end to end -------------------------------------------------------------------------------
BENCH = textwrap.dedent("""
    import torch


    def bench_reordered(device):
        x = torch.randn(65536)  # no seed: perfgate seeds both sides alike
        return lambda: x.sum()


    def bench_dropped_term(device):
        a, b, c = torch.randn(128, 128), torch.randn(128, 128), torch.randn(128)
        return lambda: a @ b + c
""")
E2E_BASE = {"pyproject.toml": textwrap.dedent("""
    [tool.perfgate]
    min_rounds = 8
    pair_rounds = 4
    max_rounds = 8
    fail_on_output_change = true
"""), "benchmarks/bench_o.py": BENCH}
E2E_HEAD = {"benchmarks/bench_o.py": BENCH.replace("x.sum()", "x.view(256, 256).sum(1).sum()")
            .replace("a @ b + c", "a @ b")}


@pytest.mark.slow
def test_end_to_end_a_reordered_sum_is_the_same_and_a_dropped_term_changes_the_result(tmp_path):
    from runner.cli.main import main

    repo = make_repo(tmp_path / "repo", E2E_BASE, E2E_HEAD)
    out = tmp_path / "out"
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(["compare", "--repo", str(repo), "--base", "base", "--head", "head", "--out",
                     str(out), "--max-time", "60", "--no-profile", "--quiet",
                     "--fail-on-regression"])
    doc = results_mod.load(out / "results.json")
    by = {b["name"]: b for b in doc["benchmarks"]}
    reordered, dropped = by["bench_reordered"]["output"], by["bench_dropped_term"]["output"]
    assert reordered["verdict"] == "same" and reordered["pairs"] >= 1, reordered
    assert reordered["nondeterminism"]["spread"] == 0
    assert dropped["verdict"] == "changed" and dropped["share_changed"] > 0.5, dropped
    assert code == 1 and "changes the result of: bench_dropped_term" in err.getvalue()
    md = (out / "report.md").read_text()
    assert "changes the result" in md and "changing the result" in md.splitlines()[1]
