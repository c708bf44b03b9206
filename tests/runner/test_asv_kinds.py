"""asv's other benchmark types run as asv defines them: ``peakmem_*`` (peak resident set) and
``mem_*`` (deep size of the returned object) compared as memory, ``track_*`` values compared in
their ``unit``. Pure rules first, then the worker side, then two real compares of the suite
tests/fixtures/suites/asv_kinds (asv's own ``peakmem_list`` and ``mem_list`` examples)."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

from bot.history.points import points_of
from runner import measures
from runner import gate
from runner import results as results_mod
from runner.conventions import asv as asv_suite
from runner.conventions.asv_names import TRACK_UNIT, self_measured_fields, track_value
from runner.conventions.base import BenchmarkShapeError
from runner.conventions.process_memory import PeakResident, deep_sizeof
from runner.pipeline.timing.measured import costs, entry, memory_of
from runner.pipeline.timing.benchstate import BenchState
from runner.report.units import fmt_quantity
from runner.report.view import change_text, interval_text
from runner.worker.child import Worker, list_suite

from .gitrepo import compare_ok, suite_repo

KINDS = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "asv_kinds"


# -- pure rules ------------------------------------------------------------------------------------
def test_case_fields_of_each_measured_kind():
    assert self_measured_fields("peakmem", "m.peakmem_x") == {
        "measures": "self", "group": "m.peakmem_x", "asv_kind": "peakmem", "unit": "B", "measure": "memory",
        "memory_kind": "rss"}
    assert self_measured_fields("mem", "m.mem_x")["memory_kind"] == "size"
    track = self_measured_fields("track", "m.track_x", "items")
    assert track["unit"] == "items" and "measure" not in track
    assert self_measured_fields("track", "m.track_x")["unit"] == TRACK_UNIT


def test_track_values_must_be_positive_numbers():
    assert track_value(3, "t") == 3.0 and track_value(Fraction(1, 4), "t") == 0.25
    for bad in ("12", True, None, 0, -1.5, float("nan"), float("inf")):
        with pytest.raises(BenchmarkShapeError, match="t: "):
            track_value(bad, "t")


def test_deep_size_counts_each_object_once_and_no_code():
    assert deep_sizeof([0] * 256) == sys.getsizeof([0] * 256) + sys.getsizeof(0)
    shared = "x" * 1000
    assert deep_sizeof([shared, shared]) == sys.getsizeof([shared, shared]) + sys.getsizeof(shared)
    loop: list = []
    loop.append(loop)
    assert deep_sizeof(loop) == sys.getsizeof(loop)

    class Slots:
        __slots__ = ("payload",)

        def __init__(self):
            self.payload = b"y" * 500

    class Plain:
        def __init__(self):
            self.payload = b"y" * 500
            self.fn = len

    assert deep_sizeof(Slots()) == sys.getsizeof(Slots()) + sys.getsizeof(b"y" * 500)
    plain = Plain()
    assert deep_sizeof(plain) >= sys.getsizeof(plain) + sys.getsizeof(plain.__dict__) + 500
    assert deep_sizeof(len) == 0 and deep_sizeof(Plain) == 0


def test_deep_size_counts_a_tensor_storage_once():
    torch = pytest.importorskip("torch")
    t = torch.zeros(1000, dtype=torch.float32)
    assert deep_sizeof([t, t[:10]]) >= 4000
    assert deep_sizeof([t, t[:10]]) < 2 * 4000  # the view shares the storage: counted once


def test_an_exact_size_has_no_floor_a_resident_set_has_one():
    grew = measures.value_memory_change([2000, 2000], [2400, 2400], "size", 0.05)
    assert grew["verdict"] == "regression" and grew["ratio"] == 1.2 and grew["kind"] == "size"
    assert measures.value_memory_change([2000, 2000], [2000, 2000], "size", 0.05)["verdict"] == "unchanged"
    # 400 bytes more resident is page noise, not a regression
    assert measures.value_memory_change([2000, 2000], [2400, 2400], "rss", 0.05)["verdict"] == "unchanged"
    big = measures.value_memory_change([10 << 20, 10 << 20], [20 << 20, 21 << 20], "rss", 0.05)
    assert big["verdict"] == "regression" and big["pairs"] == 2
    assert measures.value_memory_change([10 << 20], [20 << 20], "rss", 0.05, min_pairs=2)["verdict"] == "inconclusive"


def test_bytes_may_be_zero_other_values_not():
    assert costs([0.0, 5.0], "smaller", zero_ok=True) == [0.0, 5.0]
    assert costs([0.0, 5.0], "smaller") == [5.0]


def _memory_state(base: list[float], head: list[float], kind: str = "size") -> BenchState:
    state = BenchState(case={"name": "m.mem_x", "file": "m.py", "measures": "self", "unit": "B",
                             "measure": "memory", "memory_kind": kind})
    for b, h in zip(base, head):
        state.block_starts.append(len(state.sides["base"].samples))
        state.sides["base"].samples.append(b)
        state.sides["head"].samples.append(h)
    state.pair_rounds = 1
    return state


def test_a_memory_valued_entry_carries_its_memory_verdict_and_records():
    state = _memory_state([2000, 2000, 2000], [4000, 4000, 4000])
    assert memory_of(state, 0.05, 2)["verdict"] == "regression"
    state.verdict = "regression"
    out = entry(state, 0.99, memory_threshold=0.05, min_pairs=2)
    assert out["measure"] == "memory" and out["unit"] == "B"
    assert out["change"]["ratio"] == 2.0 and out["change"]["memory"]["verdict"] == "regression"
    assert out["head"]["memory"]["peak_bytes"] == 4000 and out["head"]["memory"]["kind"] == "size"
    doc = results_mod.new_results(repository="r", base={"ref": "b", "sha": "a" * 40}, head={"ref": "h", "sha": "b" * 40},
                                  environment={}, settings={}, benchmarks=[out])
    assert [e for e in results_mod.validation_errors(doc) if e.startswith("benchmarks")] == []
    # gated by fail_on_memory_regression only, not by the time gate
    assert gate.regressions_beyond(doc, 0.0) == []
    assert gate.memory_regressions(doc) == [out]
    assert gate.gate_failures(doc, 0.0, False) == [] and gate.gate_failures(doc, 0.0, True) == [out]
    # the history keeps it as a memory point only
    assert [(p.measure, p.value) for p in points_of(doc)] == [("memory", 4000.0)]
    assert change_text(out) == "2× larger" and interval_text(out) == "[2×, 2×] larger"


def test_a_memory_value_of_zero_bytes_is_kept_and_compared():
    state = _memory_state([0, 0], [0, 0], kind="rss")
    state.verdict = memory_of(state, 0.05, 2)["verdict"]
    out = entry(state, 0.99, memory_threshold=0.05, min_pairs=2)
    assert state.verdict == "unchanged" and out["change"]["ratio"] == 1.0
    assert [p["ratio"] for p in out["change"]["pairs"]] == [1.0, 1.0]
    grew = entry(_memory_state([0, 0], [1 << 20, 1 << 20], kind="rss"), 0.99)
    assert grew["change"]["memory"]["verdict"] == "regression"


def test_values_in_bytes_and_other_units_read_as_such():
    assert fmt_quantity(2 * 1024 * 1024, "B") == "2.0 MiB"
    assert fmt_quantity(30, "items") == "30 items"
    assert change_text({"unit": "items", "change": {"ratio": 3.0}}) == "3× larger"
    assert change_text({"unit": "s", "change": {"ratio": 3.0}}) == "3× slower"


# -- worker side -------------------------------------------------------------------------------------
@pytest.fixture()
def kinds(monkeypatch):
    monkeypatch.syspath_prepend(str(KINDS))
    return KINDS / "benchmarks"


def test_listing_and_one_run_of_each_kind(kinds):
    listing = list_suite(kinds, "asv")
    by_name = {c["name"]: c for c in listing["benchmarks"]}
    assert sorted(by_name) == ["kinds.MemSuite.mem_list", "kinds.Track.track_items(1)", "kinds.Track.track_items(3)",
                               "kinds.peakmem_list"]
    assert listing["skipped"] == [] and listing["errors"] == []
    assert by_name["kinds.Track.track_items(3)"]["params"] == {"batch": "3"}
    assert by_name["kinds.Track.track_items(3)"]["unit"] == "items"
    worker = Worker("cpu")
    values = {}
    for name, case in by_name.items():
        setup = worker.setup({"dir": str(kinds), "suite": "asv", "case": case, "min_sample_time": 0.01})
        assert setup["self_measured"] is True
        reading = worker.sample({"count": 1})["readings"][name]
        values[name] = (reading["values"], reading["unit"])
    assert values["kinds.MemSuite.mem_list"] == ([float(deep_sizeof([0] * 256))], "B")
    assert values["kinds.Track.track_items(1)"] == ([10.0], "items")
    assert values["kinds.Track.track_items(3)"] == ([30.0], "items")
    assert values["kinds.peakmem_list"][1] == "B" and values["kinds.peakmem_list"][0][0] >= 0


def test_peak_resident_sees_an_allocation_after_its_start():
    import mmap

    resident = PeakResident()
    resident.start()
    # 8 MiB of fresh pages, resident once written. An anonymous mapping, not a bytearray: in a
    # long-lived process (the whole test session) malloc may hand out freed heap pages that are
    # already resident, and the resident set then does not grow (seen: peak 0 in a full run).
    block = mmap.mmap(-1, 8 << 20)
    for offset in range(0, 8 << 20, 4096):
        block[offset] = 1
    peak = resident.peak_bytes()
    block.close()
    assert resident.kind in ("rss", "maxrss")
    if resident.kind == "rss":
        assert peak >= 7 << 20


def test_a_track_returning_text_fails_with_its_name(tmp_path, monkeypatch):
    bench = tmp_path / "suite" / "benchmarks"
    bench.mkdir(parents=True)
    (bench / "__init__.py").write_text("")
    (bench / "bad.py").write_text("def track_words():\n    return 'many'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "suite"))
    prepared = asv_suite.prepare(bench, "bad.py", "track_words", "bad.track_words")
    with pytest.raises(BenchmarkShapeError, match="bad.track_words: a track_ benchmark must return a number"):
        prepared.measure()


# -- the whole pipeline --------------------------------------------------------------------------------
@pytest.mark.slow
def test_compare_finds_each_kinds_change(tmp_path):
    repo = suite_repo(tmp_path / "repo", KINDS, "asvsizes.py", "SCALE = 1", "SCALE = 2")
    out = tmp_path / "out"
    doc = compare_ok(repo, out)
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    for name in ("kinds.peakmem_list", "kinds.MemSuite.mem_list"):
        bench = by_name[name]
        assert bench["measure"] == "memory" and bench["unit"] == "B"
        assert bench["change"]["verdict"] == "regression" == bench["change"]["memory"]["verdict"], name
    assert by_name["kinds.MemSuite.mem_list"]["change"]["memory"]["ratio"] == pytest.approx(
        deep_sizeof([0] * 512) / deep_sizeof([0] * 256))
    for name in ("kinds.Track.track_items(1)", "kinds.Track.track_items(3)"):
        bench = by_name[name]
        assert bench["unit"] == "items" and bench["change"]["verdict"] == "regression"
        assert bench["change"]["ratio"] == pytest.approx(2.0)
    assert by_name["kinds.Track.track_items(3)"]["head"]["median"] == 60.0
    assert ([b["name"] for b in gate.memory_regressions(doc)]
            == ["kinds.peakmem_list", "kinds.MemSuite.mem_list"])
    report = (out / "report.md").read_text()
    assert "60 items" in report and "4.1 KiB" in report and "× slower" not in report


@pytest.mark.slow
def test_compare_of_an_unchanged_suite_finds_no_change(tmp_path):
    repo = suite_repo(tmp_path / "repo", KINDS, "asvsizes.py", "how big things are", "how large things are")
    doc = compare_ok(repo, tmp_path / "out")
    verdicts = {b["name"]: b["change"]["verdict"] for b in doc["benchmarks"]}
    assert set(verdicts) == {"kinds.peakmem_list", "kinds.MemSuite.mem_list", "kinds.Track.track_items(1)",
                             "kinds.Track.track_items(3)"}
    assert set(verdicts.values()) <= {"unchanged", "inconclusive"}, verdicts
    assert verdicts["kinds.MemSuite.mem_list"] == "unchanged"


def test_headline_counts_a_memory_valued_change_once():
    from runner.report.view import gate_sentence

    peak = {"name": "m.peakmem_x", "measure": "memory", "unit": "B",
            "change": {"verdict": "regression", "memory": {"verdict": "regression"}}}
    timed = {"name": "m.time_x", "unit": "s", "change": {"verdict": "regression", "memory": {"verdict": "unchanged"}}}
    benchmarks = [peak, timed]
    doc = {"benchmarks": benchmarks, "settings": {"fail_threshold": 0.5}}
    assert gate_sentence(doc) == ("1 regression within the 50 % the gate allows, "
                                  "1 memory regression: gate passes")


@pytest.mark.slow
def test_run_keeps_memory_values_as_memory(tmp_path):
    from runner.cli.main import main

    repo = suite_repo(tmp_path / "repo", KINDS, "asvsizes.py", "SCALE = 1", "SCALE = 2")
    out = tmp_path / "out"
    assert main(["run", "--repo", str(repo), "--rev", "head", "--out", str(out), "--max-time", "4",
                 "--filter", "*MemSuite*", "--quiet"]) == 0
    doc = results_mod.load(out / "results.json")
    (bench,) = doc["benchmarks"]
    assert bench["measure"] == "memory" and bench["head"]["memory"]["kind"] == "size"
    assert bench["head"]["memory"]["peak_bytes"] == deep_sizeof([0] * 512)
    assert {p.measure for p in points_of(doc)} == {"memory"}  # a main-branch run feeds the memory series
