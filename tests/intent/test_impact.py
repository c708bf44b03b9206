"""intent_vs_impact, outcome_of and the report templates."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from runner.intent import STRATEGY_RISKS, intent_vs_impact
from runner.intent.impact import outcome_of

TEMPLATES = Path(__file__).resolve().parents[2] / "runner" / "report" / "templates"
FUSION = {"strategy": "kernel_fusion", "confidence": 0.99, "answer": "probably", "signals": ['title: "fuse"']}


def bench(name, verdict, hints=(), profiled=True):
    return {"name": name, "change": {"verdict": verdict},
            "hints": [{"kind": k, "confidence": c, "summary": f"{k} on {name}", "evidence": {}} for k, c in hints],
            "profile": {"base": {}, "head": {}} if profiled else None}


def test_known_risks_of_the_three_root_causes():
    assert "register_pressure" in STRATEGY_RISKS["kernel_fusion"]
    assert "sync_overhead" in STRATEGY_RISKS["host_sync_elimination"]
    assert "memory_contention" in STRATEGY_RISKS["stream_concurrency"]
    assert "precision_change" in STRATEGY_RISKS["precision_specialization"]


@pytest.mark.parametrize("intent", [None, {}, {"strategy": "unknown", "confidence": 0.0, "signals": []},
                                    {"strategy": "not_a_strategy"}])
def test_unknown_intent_is_not_applicable(intent):
    assert intent_vs_impact(intent, [bench("b", "regression")]) == {"applicable": False}


def test_confirmed_risk_and_headline():
    benches = [bench("bench_x", "regression", [("register_pressure", 0.9), ("launch_overhead", 0.4)]),
               bench("bench_y", "unchanged"), bench("bench_z", "unchanged")]
    view = intent_vs_impact(FUSION, benches)
    assert view["applicable"] and view["level"] == "execution"
    assert view["counts"] == {"regression": 1, "unchanged": 2}
    assert view["outcome"] == "regressed"
    risk = {r["kind"]: r for r in view["risks"]}
    assert risk["register_pressure"]["status"] == "confirmed"
    assert risk["register_pressure"]["benchmarks"] == ["bench_x"]
    assert risk["register_pressure"]["summary"] == "register_pressure on bench_x"
    assert risk["recompilation"]["status"] == "not_seen"
    assert view["other_hints"] == [{"kind": "launch_overhead", "benchmarks": ["bench_x"]}]
    assert view["headline"] == ("probably kernel_fusion → measured 1 regression, 2 unchanged; "
                                "risk register_pressure (kernel_fusion) confirmed on bench_x")


def test_risk_not_seen_vs_unchecked():
    seen = intent_vs_impact(FUSION, [bench("a", "improvement")])
    assert {r["status"] for r in seen["risks"]} == {"not_seen"}
    assert "no sign of its known risks" in seen["headline"]
    unchecked = intent_vs_impact(FUSION, [bench("a", "improvement", profiled=False)])
    assert {r["status"] for r in unchecked["risks"]} == {"unchecked"}
    assert "not checked" in unchecked["headline"]


def test_risk_on_several_benchmarks_sorted_by_confidence():
    intent = {"strategy": "host_sync_elimination", "confidence": 0.7, "answer": "either", "signals": [],
              "candidates": [{"strategy": "host_sync_elimination", "confidence": 0.7, "signals": []},
                             {"strategy": "transfer_reduction", "confidence": 0.2, "signals": []}]}
    benches = [bench("a", "regression", [("sync_overhead", 0.3)]), bench("b", "regression", [("sync_overhead", 0.9)])]
    view = intent_vs_impact(intent, benches)
    risk = next(r for r in view["risks"] if r["kind"] == "sync_overhead")
    assert risk["benchmarks"] == ["b", "a"] and risk["summary"] == "sync_overhead on b"
    assert view["headline"].startswith("host_sync_elimination or transfer_reduction → measured 2 regressions; "
                                       "risk sync_overhead (host_sync_elimination or transfer_reduction) confirmed on b, a")


def test_risks_of_both_candidates_are_checked_each_once():
    """Issue 34: "X or Y" checks the known risks of both; a risk of both is listed once, naming both."""
    intent = {"strategy": "kernel_fusion", "confidence": 0.5, "answer": "either", "signals": ['title: "fuse"'],
              "candidates": [{"strategy": "kernel_fusion", "confidence": 0.5, "signals": ['title: "fuse"']},
                             {"strategy": "launch_overhead_reduction", "confidence": 0.3, "signals": []},
                             {"strategy": "vectorization", "confidence": 0.1, "signals": []}]}
    view = intent_vs_impact(intent, [bench("a", "regression", [("launch_overhead", 0.8)])])
    assert [c["strategy"] for c in view["candidates"]] == ["kernel_fusion", "launch_overhead_reduction"]
    kinds = [r["kind"] for r in view["risks"]]
    assert kinds == ["register_pressure", "recompilation", "memory_growth", "launch_overhead"]
    risk = {r["kind"]: r for r in view["risks"]}
    assert risk["memory_growth"]["strategies"] == ["kernel_fusion", "launch_overhead_reduction"]
    assert risk["launch_overhead"]["status"] == "confirmed" and risk["launch_overhead"]["strategies"] == [
        "launch_overhead_reduction"]
    assert view["other_hints"] == []            # a risk of the second candidate is not an "other finding"
    assert view["intended"] == "kernel_fusion or launch_overhead_reduction" and not view["probable"]


def test_a_stored_intent_without_an_answer_is_never_probably():
    """A results.json intent of an older perfgate had no measured "probably": it reads "X or Y"."""
    old = {"strategy": "kernel_fusion", "confidence": 0.99, "signals": ['title: "fuse"'],
           "candidates": [{"strategy": "kernel_fusion", "confidence": 0.99},
                          {"strategy": "vectorization", "confidence": 0.01}]}
    view = intent_vs_impact(old, [bench("a", "improvement")])
    assert not view["probable"] and view["headline"].startswith("kernel_fusion or vectorization → measured")


@pytest.mark.parametrize("bad", [
    {"candidates": 5}, {"candidates": "ab"}, {"candidates": [None, 1, {"strategy": ["x"]}, {"strategy": {}}]},
    {"answer": ["probably"]}, {"rate": 5}, {"rate": {"kind": "top1", "right": True, "of": 2}},
    {"rate": {"kind": "top2", "right": 1, "of": 2}},       # a rate of another answer than the one shown
    {"signals": {"a": 1}}, {"confidence": [1]}, {"optimisation": "x", "gate_threshold": {}},
])
def test_any_stored_intent_reads_without_error_and_says_nothing_false(bad):
    view = intent_vs_impact(dict({"strategy": "kernel_fusion", "confidence": 0.9, "answer": "probably",
                                  "signals": []}, **bad), [])
    assert view["applicable"] and view["candidates"][0]["strategy"] == "kernel_fusion"
    assert view["rate"] == "" and view["gate"] == ""
    for odd in (["kernel_fusion"], 5, "kernel_fusion "):
        assert intent_vs_impact({"strategy": odd}, []) == {"applicable": False}
    assert intent_vs_impact(["kernel_fusion"], []) == {"applicable": False}


def test_untrusted_numbers_and_quotes_are_bounded():
    intent = {"strategy": "kernel_fusion", "confidence": "nan", "answer": "probably", "signals": ["x" * 999] * 9,
              "candidates": [{"strategy": "kernel_fusion", "confidence": 7, "signals": ["y" * 999] * 9}]}
    view = intent_vs_impact(intent, [])
    assert view["confidence"] == 0.0 and view["candidates"][0]["confidence"] == 1.0
    assert len(view["candidates"][0]["signals"]) == 3 and all(len(s) == 160 for s in view["candidates"][0]["signals"])


@pytest.mark.parametrize("verdicts,outcome", [
    (["improvement", "unchanged"], "helped"),
    (["regression", "unchanged"], "regressed"),
    (["regression", "improvement"], "mixed"),
    (["unchanged", "inconclusive"], "neutral"),
    ({"improvement": 0, "regression": 0, "unchanged": 3}, "neutral"),
    ({"improvement": 2, "regression": 0}, "helped"),
    ("regression", "regressed"),
    (["failed", "new"], None),
    ([], None),
    (None, None),
])
def test_outcome_of(verdicts, outcome):
    assert outcome_of(verdicts) == outcome


@pytest.fixture()
def env():
    from runner import report

    return report.environment()  # the report's filters; autoescape for *.html.j2


def test_markdown_section(env):
    view = intent_vs_impact(FUSION, [bench("bench_x", "regression", [("register_pressure", 0.9)])])
    text = env.get_template("_intent.md.j2").render(intent_view=view)
    assert "<summary>Intent vs impact: " in text
    assert view["headline"] in text
    assert "**confirmed** on bench_x" in text
    assert "nothing in the profiles shows it" in text


def test_sections_are_empty_when_not_applicable(env):
    for name in ("_intent.md.j2", "_intent.html.j2"):
        assert env.get_template(name).render(intent_view={"applicable": False}).strip() == ""
        assert env.get_template(name).render().strip() == ""


def test_html_section_escapes(env):
    benches = [bench("<b>x</b>", "regression", [("register_pressure", 0.9)])]
    html = env.get_template("_intent.html.j2").render(intent_view=intent_vs_impact(FUSION, benches))
    assert "<section" in html and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)))   # no autoescape
    html = plain.get_template("_intent.html.j2").render(intent_view=intent_vs_impact(FUSION, benches))
    assert "<b>x</b>" not in html and "http" not in html


def test_report_says_probably_only_when_the_classifier_earned_it(env):
    benches = [bench("bench_x", "improvement")]
    rate = {"kind": "top1", "right": 191, "of": 218, "low": 0.95, "high": 1.0}
    probable = intent_vs_impact(dict(FUSION, rate=rate), benches)
    assert probable["probable"] and probable["headline"].startswith("probably kernel_fusion → measured")
    text = env.get_template("_intent.md.j2").render(intent_view=probable)
    assert "- Intended: probably `kernel_fusion` — right 9 times in 10 at this confidence on 218 held-out pull requests" in text
    unsure = {"strategy": "kernel_fusion", "confidence": 0.41, "answer": "either", "signals": ['title: "fused"'],
              "optimisation": 0.55, "gate_threshold": 0.5,
              "rate": {"kind": "top2", "right": 78, "of": 197, "low": 0.4, "high": 0.5},
              "candidates": [{"strategy": "kernel_fusion", "confidence": 0.41, "signals": ['title: "fused"']},
                             {"strategy": "precision_specialization", "confidence": 0.31, "signals": []},
                             {"strategy": "vectorization", "confidence": 0.2, "signals": []}]}
    unclear = intent_vs_impact(unsure, benches)
    assert not unclear["probable"]
    assert [c["strategy"] for c in unclear["candidates"]] == ["kernel_fusion", "precision_specialization"]
    assert unclear["headline"].startswith("kernel_fusion or precision_specialization → measured")
    text = env.get_template("_intent.md.j2").render(intent_view=unclear)
    assert "probably" not in text
    assert ("- Intended: `kernel_fusion` or `precision_specialization` — one of the two right 4 times in 10 at this "
            "confidence on 197 held-out pull requests (optimisation 0.55; a strategy is named from 0.50)") in text
    assert 'confidence 0.41: title: "fused"' in text and "confidence 0.31: no rule or code match" in text
    html = env.get_template("_intent.html.j2").render(intent_view=unclear)
    assert "one of the two right 4 times in 10" in html and "no rule or code match" in html


def test_a_risk_is_confirmed_only_in_its_harmful_direction():
    # issue 47: the demo's "risk memory_growth confirmed ... peak memory fell 91 %"
    caching = {"strategy": "algorithm_replacement", "confidence": 0.9, "answer": "probably",
               "signals": []}
    kind = STRATEGY_RISKS["algorithm_replacement"][0]
    fell = [bench("bench_faster", "improvement", [(kind, 0.6)])]
    view = intent_vs_impact(caching, fell)
    risk = next(r for r in view["risks"] if r["kind"] == kind)
    assert risk["status"] == "harmless" and risk["benchmarks"] == ["bench_faster"]
    assert "confirmed" not in view["headline"]
    assert f"{kind} seen only in its harmless direction on bench_faster" in view["headline"]
    grew = fell + [bench("bench_slower", "regression", [(kind, 0.5)])]
    risk = next(r for r in intent_vs_impact(caching, grew)["risks"] if r["kind"] == kind)
    assert risk["status"] == "confirmed" and risk["benchmarks"] == ["bench_slower"]


def test_the_report_says_when_no_intent_was_read():
    from runner.report.templating import intent_section

    doc = {"base": {"sha": "a" * 40},
           "intent": {"strategy": "unknown", "confidence": 0.0, "signals": []},
           "benchmarks": [bench("b", "regression")]}
    assert intent_section(doc)["unstated"] is True
    assert "unstated" not in intent_section({**doc, "base": None})  # perfgate run: no PR to read
