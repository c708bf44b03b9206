"""evaluation/intent_real.jsonl (real merged pull requests) and the scripts that use it."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from runner.intent import STRATEGIES, UNKNOWN

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"


def _module(name: str):
    if str(EVALUATION) not in sys.path:
        sys.path.insert(0, str(EVALUATION))
    spec = importlib.util.spec_from_file_location(name, EVALUATION / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def real():
    return _module("intent_real")


@pytest.fixture(scope="module")
def rows(real):
    return real.load()


def test_corpus_size_labels_and_unknown_share(rows):
    assert len(rows) >= 1500
    assert len({r["source"] for r in rows}) == len(rows)
    labels = {r["label"] for r in rows}
    assert labels == set(STRATEGIES) | {UNKNOWN}          # every strategy is represented
    unknown = sum(r["label"] == UNKNOWN for r in rows) / len(rows)
    assert 0.15 <= unknown <= 0.7
    for round_no in (1, 2, 3):
        blind = [r for r in rows if r.get("round", 1) == round_no and r["split"] != "real-train"]
        assert sum(r["label"] != UNKNOWN for r in blind) >= 60     # enough optimisations to score
    for r in rows:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", r["source"]), r["source"]
        assert r["url"] == "https://github.com/{}/pull/{}".format(*r["source"].split("#"))
        assert r["title"] and r["reason"]
        assert all(a in STRATEGIES and a != r["label"] for a in r["also"])
        assert not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", r["body"] + r["reason"] + r["diff"])
        assert len(r["diff"].splitlines()) <= 200


def test_blind_split_is_the_seeded_hash_of_each_round(real, rows):
    assert all(r["split"] == real.split_of(r["source"], r.get("round", 1)) for r in rows)
    for round_no, blind in ((1, "real-test"), (2, "real-test2"), (3, "real-test3")):
        these = [r for r in rows if r.get("round", 1) == round_no]
        assert {r["split"] for r in these} == {"real-train", blind}
        assert 0.2 <= sum(r["split"] == blind for r in these) / len(these) <= 0.4
    assert real.split_of("pytorch/pytorch#1") == real.split_of("pytorch/pytorch#1")
    # The two rounds' salts are independent: a source's round-1 split says nothing of round 2.
    sources = [f"a/b#{n}" for n in range(400)]
    same = sum((real.split_of(s, 1) == "real-test") == (real.split_of(s, 2) == "real-test2") for s in sources)
    assert same < 0.8 * len(sources)
    with pytest.raises(KeyError):
        real.split_of("a/b#1", 7)


def test_round_6_is_all_blind_and_every_other_row_is_training(real, rows, tmp_path):
    """real-test6 is every row of round 6 (new repositories; split_of has no salt for it) and
    nothing else; real-test5 (every row of round 5) was scored and is training data now, its rows
    keep the split they were stored with."""
    assert real.BLIND == "real-test6" and set(real.SPLITS) == {"real-train", "real-test6"}
    assert {real.split_of(f"a/b#{n}", 6) for n in range(50)} == {"real-test6"}
    assert {real.split_of(f"a/b#{n}", 5) for n in range(50)} == {"real-test5"}
    assert real.current_split({"source": "a/b#1", "round": 6, "split": "real-test6"}) == "real-test6"
    assert real.current_split({"source": "a/b#1", "round": 5, "split": "real-test5"}) == "real-train"
    assert any(row.get("round") == 5 for row in rows)
    for row in rows:
        assert real.current_split(row) == ("real-test6" if row.get("round", 1) == 6 else "real-train")
    fresh = {"source": "new/repo#7", "url": "https://github.com/new/repo/pull/7", "round": 6, "split": "real-test6",
             "label": UNKNOWN, "also": [], "title": "t", "body": "", "diff": "", "reason": "r"}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(fresh) + "\n")
    assert [r["source"] for r in real.load(path)] == ["new/repo#7"]
    path.write_text(json.dumps(dict(fresh, split="real-train")) + "\n")
    with pytest.raises(SystemExit, match="split does not match"):
        real.load(path)


def test_the_empty_blind_split_is_reported_not_scored(real, monkeypatch, capsys):
    monkeypatch.setattr(real, "load", lambda: [])
    assert real.main(["--split", "real-test6", "--no-write"]) == 0
    assert "real-test6: empty" in capsys.readouterr().out


def test_label_conventions_are_applied_and_recorded(rows):
    """Every decision of relabel_intent.RELABELS is in the corpus with the old label kept, and no
    other row carries a ``relabel`` record; applying the decisions again changes nothing."""
    relabel = _module("relabel_intent")
    by_source = {r["source"]: r for r in rows}
    for source, (label, also, convention) in relabel.RELABELS.items():
        row = by_source[source]
        assert (row["label"], tuple(row["also"])) == (label, also)
        assert row["relabel"]["convention"] == convention
        assert (row["relabel"]["from"], tuple(row["relabel"]["also_from"])) != (label, also)
        assert relabel.relabel(row) is row
    assert {r["source"] for r in rows if "relabel" in r} == set(relabel.RELABELS)


def test_convention_suspects_are_selected_by_label_side_and_wording():
    relabel = _module("relabel_intent")
    row = {"source": "a/b#1", "label": "warp_level_reduction", "also": [], "title": "Tune the split-K heuristic",
           "body": "", "reason": "split count chosen from the SM count"}
    found = relabel.suspects([row, dict(row, source="a/b#2", label="kernel_fusion")])
    assert [r["source"] for r in found["C1 split count or heuristic"]] == ["a/b#1"]
    assert not found["C1 a new split path"]
    assert relabel.relabel(row) is row                   # no decision recorded for it


def test_load_refuses_a_moved_row(real, rows, tmp_path):
    moved = dict(rows[0], split="real-test" if rows[0]["split"] == "real-train" else "real-train")
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(moved) + "\n")
    with pytest.raises(SystemExit, match="split does not match"):
        real.load(path)
    second = next(r for r in rows if r.get("round") == 2 and r["split"] == "real-test2")
    for bad in (dict(second, split="real-train"), dict(second, split="real-test"), dict(second, round=7)):
        path.write_text(json.dumps(bad) + "\n")
        with pytest.raises(SystemExit, match="split does not match"):
            real.load(path)
    path.write_text(json.dumps(dict(rows[0], label="faster")) + "\n")
    with pytest.raises(SystemExit, match="not strategy ids"):
        real.load(path)


def test_evaluate_counts_top1_unknown_and_reliability(real):
    rows = [{"source": "a/b#1", "label": "kernel_fusion", "also": [], "title": "t"},
            {"source": "a/b#2", "label": "vectorization", "also": ["kernel_fusion"], "title": "t"},
            {"source": "a/b#3", "label": UNKNOWN, "also": [], "title": "t"},
            {"source": "a/b#4", "label": UNKNOWN, "also": [], "title": "t"}]
    results = [{"strategy": "kernel_fusion", "confidence": 0.95, "candidates": [{"strategy": "kernel_fusion"}]},
               {"strategy": "kernel_fusion", "confidence": 0.85,
                "candidates": [{"strategy": "kernel_fusion"}, {"strategy": "vectorization"}]},
               {"strategy": UNKNOWN, "confidence": 0.0}, {"strategy": "autotuning", "confidence": 0.5}]
    m = real.evaluate(rows, results)
    assert (m["correct"], m["lenient"], m["n_signal"]) == (1, 2, 2)
    assert m["top2"] == 2 and m["level"] == 2          # fusion and vectorization: both execution level
    other = real.evaluate(rows[1:2], [dict(results[1], strategy="copy_avoidance", candidates=[])])
    assert other["top2"] == 0 and other["level"] == 0  # copy_avoidance is logic level
    assert m["unknown_precision"] == 1.0 and m["unknown_recall"] == 0.5
    assert (m["high_n"], m["high_right"]) == (2, 1)
    assert sum(b["n"] for b in m["reliability"]) == 3


def test_grouped_folds_keep_each_repository_in_one_fold(rows):
    """Leave-repositories-out folds (train_intent_model --grouped): a repository never spans two
    folds, every row is in one fold, and the folds are of like size."""
    train = _module("train_intent_model")
    parts = train.grouped_folds(rows, 5)
    assert sorted(r["source"] for p in parts for r in p) == sorted(r["source"] for r in rows)
    repos = [{train.repository(r) for r in p} for p in parts]
    assert all(not (a & b) for i, a in enumerate(repos) for b in repos[i + 1:])
    sizes = [len(p) for p in parts]
    assert max(sizes) <= 1.3 * min(sizes)
    with pytest.raises(ValueError, match="cannot fill"):
        train.grouped_folds(rows[:1], 2)
    records = [{"label": "kernel_fusion", "strategy": "kernel_fusion", "second": "vectorization", "gate": 0.9,
                "confidence": 0.95, "backed": True},
               {"label": "vectorization", "strategy": "kernel_fusion", "second": "vectorization", "gate": 0.3,
                "confidence": 0.2, "backed": True},
               {"label": UNKNOWN, "strategy": "kernel_fusion", "second": "vectorization", "gate": 0.2,
                "confidence": 0.1, "backed": False}]
    f = train.figures(records, 0.9)
    assert (f["n"], f["top1"], f["top2"]) == (2, 1, 2)
    assert (f["unknown_called"], f["unknown_right"], f["n_unknown"]) == (2, 1, 1)
    assert (f["probably_n"], f["probably_right"]) == (1, 1)
