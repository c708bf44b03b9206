"""runner.intent.precise: a strategy only where a rule measured >= 90 % precise on real PRs
backs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.intent.precise import (
    MIN_FIRED, MIN_PRECISION, PRECISE_PATH, fired_rules, name_strategy, precise_rules, rule_key)
from runner.intent.rules import CODE_RULES, STRATEGIES, TEXT_RULES

CORPUS = Path(__file__).resolve().parents[2] / "evaluation" / "intent_real.jsonl"


def test_every_stored_rule_exists_and_meets_the_thresholds():
    rules = precise_rules()
    assert rules, "precise.json names no rule: the report could never name a strategy"
    for key, row in rules.items():
        assert row["strategy"] in STRATEGIES
        assert row["fired"] >= MIN_FIRED and row["right"] >= MIN_PRECISION * row["fired"]


def test_the_stored_counts_are_recounted_from_the_corpus():
    """The figures the report quotes ("right on 13 of the 13 ...") are the corpus's, exactly."""
    rules = precise_rules()
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    tally = {key: [0, 0] for key in rules}
    for row in rows:
        for key in fired_rules(title=row["title"], body=row["body"], diff=row["diff"],
                               only=frozenset(rules)):
            tally[key][0] += 1
            tally[key][1] += rules[key]["strategy"] in {row["label"], *row.get("also", [])}
    assert {k: {"fired": n, "right": r} for k, (n, r) in tally.items()} == {
        k: {"fired": v["fired"], "right": v["right"]} for k, v in rules.items()}
    stored = json.loads(PRECISE_PATH.read_text(encoding="utf-8"))
    assert stored["prs"] == len(rows)


def test_a_measured_rule_names_its_strategy_with_the_match_and_its_record():
    # two measured rules match "exp2": it is quoted once
    assert name_strategy(title="Use exp2 instead of exp")["signals"] == ['matched "exp2"']
    named = name_strategy(title="Softmax: fold the log2(e) scale into exp2")
    assert named["strategy"] == "math_simplification"
    assert named["signals"][0].startswith('matched "')
    assert named["precision"]["fired"] >= MIN_FIRED
    right, fired = named["precision"]["right"], named["precision"]["fired"]
    assert named["confidence"] == round(right / fired, 3)


@pytest.mark.parametrize("title", [
    "Fuse the bias add and GELU into one kernel",          # the rules read kernel_fusion: < 90 %
    "Remove a host sync in the sampler",
    "Fix a typo in the README",
    "",
])
def test_rules_below_the_bar_name_nothing(title):
    assert name_strategy(title=title) == {"strategy": "unknown", "confidence": 0.0, "signals": [],
                                         "precision": None}


def test_two_measured_rules_naming_different_strategies_name_none():
    both = name_strategy(title="Use exp2 and cut register pressure in the attention kernel")
    assert both["strategy"] == "unknown"


def test_a_code_rule_fires_on_added_code_only():
    index = next(i for i, r in enumerate(CODE_RULES) if r.pattern.search("__launch_bounds__(128)"))
    key = rule_key("code", index)
    added = "--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-__global__ void k() {\n" \
            "+__global__ void __launch_bounds__(128) k() {\n"
    assert key in fired_rules(diff=added)
    removed = added.replace("-__global__ void k", "-__global__ void __launch_bounds__(128) k") \
                   .replace("+__global__ void __launch_bounds__(128) k", "+__global__ void k")
    assert key not in fired_rules(diff=removed)
    comment = "--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-int x;\n+int x;  // __launch_bounds__(128)\n"
    assert key not in fired_rules(diff=comment)


def test_text_rules_read_every_source_lower_cased():
    index = next(i for i, r in enumerate(TEXT_RULES) if r.pattern.search("register pressure"))
    key = rule_key("text", index)
    for where in ("title", "body", "commit_messages", "labels"):
        text = "REGISTER PRESSURE"
        value = [text] if where in ("commit_messages", "labels") else text
        assert key in fired_rules(**{where: value}), where


def test_a_stale_precise_file_is_a_clear_error(tmp_path):
    gone = tmp_path / "gone.json"
    gone.write_text(json.dumps({"rules": [{"rule": "text:no such rule", "strategy": "kernel_fusion",
                                           "fired": 20, "right": 20}]}))
    with pytest.raises(ValueError, match="is not in rules.py"):
        precise_rules.__wrapped__(gone)
    weak = tmp_path / "weak.json"
    weak.write_text(json.dumps({"rules": [{"rule": rule_key("text", 0), "strategy": "x",
                                           "fired": 20, "right": 17}]}))
    with pytest.raises(ValueError, match="below the thresholds"):
        precise_rules.__wrapped__(weak)
