"""runner/model.py, the typed results.json: every stored document reads back as itself
(``Results.from_json(doc).to_json() == doc``, key order included), the engine's constructors
write what they always wrote, and the model types what readers use (verdicts, sides, changes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import results
from runner.model import ABSENT, BenchmarkResult, Change, Pair, Results, Settings, Side, WorkerRecord

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared")


def _fixture_files() -> list[Path]:
    """Every results.json document under tests/ (and the shared fixtures and cases, where present)."""
    found = []
    for top in (ROOT / "tests", SHARED / "fixtures", SHARED / "cases"):
        if top.is_dir():
            found += [p for p in sorted(top.rglob("*.json")) if p.name.endswith("results.json")]
    return found


FILES = _fixture_files()


def test_there_are_fixtures_to_read():
    assert len([p for p in FILES if p.is_relative_to(ROOT)]) >= 6  # the security payloads and a real compare's


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_every_stored_document_reads_back_as_itself(path):
    text = path.read_text("utf-8")
    doc = json.loads(text)
    model = Results.from_json(doc)
    assert model.to_json() == doc
    assert json.dumps(model.to_json(), indent=1) == json.dumps(doc, indent=1)  # the same key order too
    if isinstance(model.benchmarks, list):
        for bench, raw in zip(model.benchmarks, doc["benchmarks"]):
            if isinstance(raw, dict):
                assert isinstance(bench, BenchmarkResult) and bench.name == raw.get("name", ABSENT)
                if isinstance(raw.get("change"), dict):
                    assert isinstance(bench.change, Change) and bench.change.verdict == raw["change"].get("verdict", ABSENT)


def test_a_real_compare_s_document_is_typed_all_the_way_down():
    doc = json.loads((ROOT / "tests/fixtures/results/compare_cpu.results.json").read_text())
    model = Results.from_json(doc, 1)
    assert isinstance(model.settings, Settings) and model.settings.looks == doc["settings"]["looks"]
    bench = model.benchmarks[0]
    assert isinstance(bench.base, Side) and bench.base.median == doc["benchmarks"][0]["base"]["median"]
    assert all(isinstance(p, Pair) for p in bench.change.pairs) and bench.change.verdict in results.VERDICTS
    assert isinstance(model.worker, WorkerRecord) and model.worker.sides.keys() == {"base", "head"}
    assert results.validate(model.to_json())


def test_a_document_with_fields_no_class_knows_keeps_them_in_place():
    doc = {"schema_version": 1, "future": {"x": 1}, "benchmarks": [
        {"name": "a", "newer_key": [1], "change": {"verdict": "unchanged", "later": True}, "base": None}]}
    model = Results.from_json(doc)
    assert model.extra == {"future": {"x": 1}} and model.benchmarks[0].extra == {"newer_key": [1]}
    assert model.benchmarks[0].change.extra == {"later": True} and model.benchmarks[0].base is None
    assert model.benchmarks[0].head is ABSENT and "head" not in model.to_json()["benchmarks"][0]
    assert list(model.to_json()) == ["schema_version", "future", "benchmarks"]


def test_an_unknown_schema_version_is_refused():
    with pytest.raises(ValueError, match="schema_version 2"):
        Results.from_json({"schema_version": 2})


def test_the_constructors_write_the_keys_in_the_order_they_always_did():
    side = results.side([3.0, 1.0, 2.0], peak_memory_bytes=7, number=4, warmup_calls=9, others_busy=0.1)
    assert list(side) == ["samples", "median", "peak_memory_bytes", "error", "number", "warmup_calls",
                          "others_busy", "ci_low", "ci_high"]
    assert side["median"] == 2.0 and side["peak_memory_bytes"] == 7
    failed = results.failed_file("bench_x.py", "ImportError: x")
    assert failed["change"] == {"ratio": None, "ci_low": None, "ci_high": None, "p_value": None, "verdict": "failed"}
    assert list(failed) == ["name", "file", "unit", "base", "head", "change", "hints", "profile"]
    entry = results.benchmark("b", "f.py", base=None, head=None, change=None, family="b", params={"n": 1},
                              direction="bigger", unit="tokens/s")
    assert list(entry)[-3:] == ["direction", "family", "params"] and entry["params"] == {"n": "1"}
    doc = results.new_results(repository="r", base=None, head={"ref": "x", "sha": "a" * 40}, environment={},
                              settings={"threshold": 0.02, "alpha": 0.05, "min_rounds": 4, "max_time": 5.0},
                              benchmarks=[entry], kind="run", code_map={"sha": "a"})
    assert list(doc)[:11] == ["schema_version", "tool", "created_at", "repository", "base", "head", "environment",
                              "settings", "benchmarks", "intent", "summary"]
    assert list(doc)[11:] == ["kind", "code_map"]


def test_verdicts_are_strings_to_json_and_to_comparisons():
    assert results.Verdict.REGRESSION == "regression" and json.dumps(results.Verdict.NEW) == '"new"'
    assert set(results.CHANGED) < set(results.HINTED) < set(results.PAIRED) < set(results.VERDICTS)
    assert "failed" not in results.PAIRED and "removed" not in results.PAIRED
