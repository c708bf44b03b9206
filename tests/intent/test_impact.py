"""intent_vs_impact, outcome_of and the report templates."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from runner.intent import STRATEGY_RISKS, intent_vs_impact
from runner.intent.impact import outcome_of
from runner.report.notes import hint_label

TEMPLATES = Path(__file__).resolve().parents[2] / "runner" / "report" / "templates"
#: a strategy named on a measured rule (runner.intent.precise): occupancy_control's one risk
#: is register_pressure
OCCUPANCY = {"strategy": "occupancy_control", "confidence": 0.9,
             "signals": ['matched "register pressure"'],
             "precision": {"right": 9, "fired": 10}}

def bench(name, verdict, hints=(), profiled=True):
    return {"name": name, "change": {"verdict": verdict},
            "hints": [{"kind": k, "confidence": c, "summary": f"{k} on {name}", "evidence": {}} for k, c in hints],
            "profile": {"base": {}, "head": {}} if profiled else None}


def test_known_risks_of_the_three_root_causes():
    assert "register_pressure" in STRATEGY_RISKS["kernel_fusion"]
    assert "sync_overhead" in STRATEGY_RISKS["host_sync_elimination"]
    assert "memory_contention" in STRATEGY_RISKS["stream_concurrency"]
    assert "precision_change" in STRATEGY_RISKS["precision_specialization"]


@pytest.mark.parametrize("intent", [
    None, {}, {"strategy": "unknown", "confidence": 0.0, "signals": [], "precision": None},
    {"strategy": "not_a_strategy", "precision": {"right": 9, "fired": 10}},
    # an older perfgate's learned guess: no measured rule behind it, so nothing is named
    {"strategy": "kernel_fusion", "confidence": 0.99, "answer": "probably", "signals": []},
    {"strategy": "occupancy_control", "precision": {"right": 11, "fired": 10}},
    {"strategy": "occupancy_control", "precision": {"right": True, "fired": 10}},
    {"strategy": "occupancy_control", "precision": {"right": 0, "fired": 0}},
    {"strategy": "occupancy_control", "precision": [9, 10]},
    {"strategy": ["occupancy_control"], "precision": {"right": 9, "fired": 10}},
])
def test_an_intent_without_measured_evidence_is_not_shown(intent):
    assert intent_vs_impact(intent, [bench("b", "regression")]) == {"applicable": False}


def test_confirmed_risk_and_headline():
    benches = [bench("bench_x", "regression", [("register_pressure", 0.9), ("launch_overhead", 0.4)]),
               bench("bench_y", "unchanged"), bench("bench_z", "unchanged")]
    view = intent_vs_impact(OCCUPANCY, benches)
    assert view["applicable"] and view["level"] == "execution"
    assert view["precision"] == {"right": 9, "fired": 10} and view["confidence"] == 0.9
    assert view["counts"] == {"regression": 1, "unchanged": 2}
    assert view["outcome"] == "regressed"
    assert view["risks"] == [{"kind": "register_pressure", "strategies": ["occupancy_control"],
                              "status": "confirmed", "benchmarks": ["bench_x"],
                              "summary": "register_pressure on bench_x"}]
    assert view["other_hints"] == [{"kind": "launch_overhead", "benchmarks": ["bench_x"]}]
    assert view["headline"] == ("occupancy_control → measured 1 regression, 2 unchanged; "
                                "risk register_pressure confirmed on bench_x")


def test_risk_not_seen_vs_unchecked():
    seen = intent_vs_impact(OCCUPANCY, [bench("a", "improvement")])
    assert {r["status"] for r in seen["risks"]} == {"not_seen"}
    assert "no sign of its known risks (register_pressure)" in seen["headline"]
    unchecked = intent_vs_impact(OCCUPANCY, [bench("a", "improvement", profiled=False)])
    assert {r["status"] for r in unchecked["risks"]} == {"unchecked"}
    assert "not checked" in unchecked["headline"]


def test_risk_on_several_benchmarks_sorted_by_confidence():
    benches = [bench("a", "regression", [("register_pressure", 0.3)]),
               bench("b", "regression", [("register_pressure", 0.9)])]
    risk = intent_vs_impact(OCCUPANCY, benches)["risks"][0]
    assert risk["benchmarks"] == ["b", "a"] and risk["summary"] == "register_pressure on b"


def test_untrusted_numbers_and_quotes_are_bounded():
    intent = dict(OCCUPANCY, confidence="nan", signals=["x" * 999] * 9)
    view = intent_vs_impact(intent, [])
    assert view["confidence"] == 0.0
    assert len(view["signals"]) == 3 and all(len(s) == 160 for s in view["signals"])
    assert intent_vs_impact(dict(OCCUPANCY, signals={"a": 1}), [])["signals"] == []


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
    pressure = [bench("bench_x", "regression", [("register_pressure", 0.9)])]
    view = intent_vs_impact(OCCUPANCY, pressure)
    text = env.get_template("_intent.md.j2").render(intent_view=view)
    assert "<summary>Intent vs impact: " in text
    assert view["headline"] in text
    assert "**confirmed** on bench_x" in text
    assert "- Known risk: register pressure: **confirmed**" in text  # in words, not its key
    html = env.get_template("_intent.html.j2").render(intent_view=view)
    assert "Known risk: register pressure: <strong>confirmed</strong>" in html
    quiet = intent_vs_impact(OCCUPANCY, [bench("bench_y", "regression")])
    assert "nothing in the profiles shows it" in env.get_template("_intent.md.j2").render(
        intent_view=quiet)


def test_sections_are_empty_when_not_applicable(env):
    for name in ("_intent.md.j2", "_intent.html.j2"):
        assert env.get_template(name).render(intent_view={"applicable": False}).strip() == ""
        assert env.get_template(name).render().strip() == ""


def test_html_section_escapes(env):
    benches = [bench("<b>x</b>", "regression", [("register_pressure", 0.9)])]
    view = intent_vs_impact(OCCUPANCY, benches)
    html = env.get_template("_intent.html.j2").render(intent_view=view)
    assert "<section" in html and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)))   # no autoescape
    plain.globals["hint_label"] = hint_label
    html = plain.get_template("_intent.html.j2").render(intent_view=view)
    assert "<b>x</b>" not in html and "http" not in html


def test_the_section_names_the_rule_and_its_measured_precision(env):
    view = intent_vs_impact(OCCUPANCY, [bench("bench_x", "improvement")])
    text = env.get_template("_intent.md.j2").render(intent_view=view)
    assert ("- Intended: `occupancy_control` (execution level: ") in text
    assert ('named by a rule right on 9 of the 10 real pull requests it matches: '
            'matched "register pressure"') in text
    html = env.get_template("_intent.html.j2").render(intent_view=view)
    assert "named by a rule right on 9 of the 10 real pull requests it matches" in html


def test_a_risk_is_confirmed_only_in_its_harmful_direction():
    # issue 47: the demo's "risk memory_growth confirmed ... peak memory fell 91 %"
    caching = {"strategy": "algorithm_replacement", "confidence": 0.9, "signals": [],
               "precision": {"right": 9, "fired": 10}}
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


def test_the_report_says_nothing_about_strategy_when_none_was_named():
    from runner.report.templating import intent_section

    doc = {"base": {"sha": "a" * 40},
           "intent": {"strategy": "unknown", "confidence": 0.0, "signals": [], "precision": None},
           "benchmarks": [bench("b", "regression")]}
    assert intent_section(doc) == {"applicable": False}
