"""intent_vs_impact, outcome_of and the report templates."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from runner.intent import STRATEGY_RISKS, intent_vs_impact
from runner.intent.impact import outcome_of

TEMPLATES = Path(__file__).resolve().parents[2] / "runner" / "report" / "templates"
FUSION = {"strategy": "kernel_fusion", "confidence": 0.8, "signals": ['title: "fuse"']}


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
                                "risk register_pressure confirmed on bench_x")


def test_risk_not_seen_vs_unchecked():
    seen = intent_vs_impact(FUSION, [bench("a", "improvement")])
    assert {r["status"] for r in seen["risks"]} == {"not_seen"}
    assert "no sign of its known risks" in seen["headline"]
    unchecked = intent_vs_impact(FUSION, [bench("a", "improvement", profiled=False)])
    assert {r["status"] for r in unchecked["risks"]} == {"unchecked"}
    assert "not checked" in unchecked["headline"]


def test_risk_on_several_benchmarks_sorted_by_confidence():
    intent = {"strategy": "host_sync_elimination", "confidence": 0.7, "signals": []}
    benches = [bench("a", "regression", [("sync_overhead", 0.3)]), bench("b", "regression", [("sync_overhead", 0.9)])]
    view = intent_vs_impact(intent, benches)
    risk = next(r for r in view["risks"] if r["kind"] == "sync_overhead")
    assert risk["benchmarks"] == ["b", "a"] and risk["summary"] == "sync_overhead on b"
    assert view["headline"].startswith("intent unclear (host_sync_elimination 0.70) → measured 2 regressions")


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
    assert "### Intent vs impact" in text
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


def test_report_says_probably_only_above_the_measured_level(env):
    from runner.intent import model
    level = model.probable_above()
    assert 0.5 <= level <= 0.95
    sure = dict(FUSION, confidence=level)
    unsure = {"strategy": "kernel_fusion", "confidence": round(level - 0.05, 2), "signals": ['title: "fused"'],
              "candidates": [{"strategy": "kernel_fusion", "confidence": round(level - 0.05, 2), "signals": []},
                             {"strategy": "precision_specialization", "confidence": 0.31, "signals": []},
                             {"strategy": "vectorization", "confidence": 0.2, "signals": []},
                             {"strategy": "copy_avoidance", "confidence": 0.1, "signals": []}]}
    benches = [bench("bench_x", "improvement")]
    probable = intent_vs_impact(sure, benches)
    assert probable["probable"] and probable["headline"].startswith("probably kernel_fusion → measured")
    assert "- Intended: probably `kernel_fusion`" in env.get_template("_intent.md.j2").render(intent_view=probable)
    unclear = intent_vs_impact(unsure, benches)
    assert not unclear["probable"]
    assert [c["strategy"] for c in unclear["candidates"]] == ["kernel_fusion", "precision_specialization",
                                                              "vectorization"]
    assert unclear["headline"].startswith(f"intent unclear (kernel_fusion {level - 0.05:.2f} or "
                                          "precision_specialization 0.31 or vectorization 0.20) → measured")
    text = env.get_template("_intent.md.j2").render(intent_view=unclear)
    assert "probably" not in text
    assert "- Intended: unclear; candidates `kernel_fusion`" in text and "`precision_specialization` (0.31)" in text
    html = env.get_template("_intent.html.j2").render(intent_view=unclear)
    assert "Intended: unclear; candidates <code>kernel_fusion</code>" in html


def test_candidates_of_an_old_result_start_with_its_strategy():
    intent = {"strategy": "autotuning", "confidence": 0.4, "signals": [],
              "candidates": [{"strategy": "launch_config_tuning", "confidence": 0.5},
                             {"strategy": "not_a_strategy", "confidence": 0.9}]}
    view = intent_vs_impact(intent, [bench("b", "unchanged")])
    assert [c["strategy"] for c in view["candidates"]] == ["autotuning", "launch_config_tuning"]
