"""runner/results.py's constructors and accessors: they write the keys in the order perfgate always
wrote them, leave out what is absent, and read a benchmark's change whether it has one or not."""

from __future__ import annotations

from runner import gate, results


def test_the_constructors_write_the_keys_in_the_order_they_always_did():
    side = results.side([3.0, 1.0, 2.0], peak_memory_bytes=7, number=4, warmup_calls=9,
                        others_busy=0.1)
    assert list(side) == ["samples", "median", "peak_memory_bytes", "error", "number",
                          "warmup_calls", "others_busy", "ci_low", "ci_high"]
    assert side["median"] == 2.0 and side["peak_memory_bytes"] == 7
    failed = results.failed_file("bench_x.py", "ImportError: x")
    assert failed["change"] == {"ratio": None, "ci_low": None, "ci_high": None, "p_value": None,
                                "verdict": "failed"}
    assert list(failed) == ["name", "file", "unit", "base", "head", "change", "hints", "profile"]
    entry = results.benchmark("b", "f.py", base=None, head=None, change=None, family="b",
                              params={"n": 1}, direction="bigger", unit="tokens/s")
    assert list(entry)[-3:] == ["direction", "family", "params"] and entry["params"] == {"n": "1"}
    doc = results.new_results(repository="r", base=None, head={"ref": "x", "sha": "a" * 40},
                              environment={},
                              settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 4,
                                        "max_time": 5.0},
                              benchmarks=[entry], kind="run", code_map={"sha": "a"})
    assert list(doc)[:11] == ["schema_version", "tool", "created_at", "repository", "base", "head",
                              "environment", "settings", "benchmarks", "intent", "summary"]
    assert list(doc)[11:] == ["kind", "code_map"]


def test_a_change_keeps_the_record_in_the_callers_order_and_an_update_keeps_each_key_in_place():
    change = results.change(verdict="regression", ratio=1.5, ci_low=1.4, ci_high=1.6, p_value=0.01,
                            rounds=8, seconds=2.0)
    assert list(change) == ["ratio", "ci_low", "ci_high", "p_value", "verdict", "rounds", "seconds"]
    entry = results.benchmark("b", "f.py", base=None, head=None, change=change)
    results.update_change(entry, memory={"verdict": "unchanged"}, ratio=1.2, p_value=None)
    assert list(results.change_of(entry)) == ["ratio", "ci_low", "ci_high", "p_value", "verdict",
                                              "rounds", "seconds", "memory"]
    assert results.change_of(entry)["ratio"] == 1.2 and results.verdict_of(entry) == "regression"
    single = results.measured("b", "f.py", results.side([1.0]))
    assert results.change_of(single) == {} and results.verdict_of(single) is None


def test_the_verdict_subsets_nest_and_keep_the_schema_s_order():
    assert set(results.CHANGED) < set(results.HINTED) < set(results.PAIRED) < set(results.VERDICTS)
    assert "failed" not in results.PAIRED and "removed" not in results.PAIRED
    for subset in (results.CHANGED, results.HINTED, results.PAIRED):
        assert list(subset) == [v for v in results.VERDICTS if v in subset]


def test_a_benchmark_the_head_broke_fails_the_gate_and_one_broken_on_both_sides_does_not():
    ran = results.side([1e-3, 1.1e-3])
    broke = results.side(error="RuntimeError: shape mismatch")
    entries = [results.benchmark("broken_by_head", "f.py", base=ran, head=broke,
                                 change=results.change("failed")),
               results.benchmark("broken_on_both", "f.py", base=broke, head=broke,
                                 change=results.change("failed")),
               results.benchmark("fixed_by_head", "f.py", base=broke, head=ran,
                                 change=results.change("failed")),
               results.failed_file("bench_y.py", "ImportError: y")]
    doc = results.new_results(repository="r", base={"ref": "b", "sha": "b" * 40},
                              head={"ref": "h", "sha": "h" * 40},
                              environment={}, settings={}, benchmarks=entries)
    assert [e["name"] for e in gate.broken_by_head(doc)] == ["broken_by_head"]
    assert [e["name"] for e in gate.gate_failures(doc, 0.05, False)] == ["broken_by_head"]
