"""evaluation/pair_estimators.py: its replay of the looks, with the rule the run itself used,
gives back the run's own verdicts on the committed sample of real compares (this VM, 2026-12-03),
so what it says of the other estimates is about the estimates, not about the replay."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from runner import stats

SCRIPT = Path(__file__).resolve().parents[2] / "evaluation" / "pair_estimators.py"


def _module():
    spec = importlib.util.spec_from_file_location("pair_estimators", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_replay_gives_back_the_runs_own_verdicts():
    pe = _module()
    docs = pe.load(None)
    assert len(docs) >= 4
    same = total = 0
    for _, doc in docs:
        settings = doc["settings"]
        rule = "hl+tost" if settings.get("eq_level") else "hl"
        outs = [(b["change"]["verdict"], pe.replay(b["change"], b["base"]["samples"], b["head"]["samples"], settings, rule))
                for b in doc["benchmarks"]]
        adjusted = stats.benjamini_hochberg([o["p_seq"] for _, o in outs])
        for (verdict, o), q in zip(outs, adjusted):
            replayed = stats.decide(o["est"], settings["threshold"], q < settings["alpha"], settings["min_process_pairs"])
            total += 1
            same += replayed == verdict
    # rounds a run left out as disturbed are not in results.json: a few replays may differ
    assert total >= 30 and same >= 0.9 * total, (same, total)


def test_the_sample_shows_what_the_study_found():
    pe = _module()
    rows = {(r["compare"], r["estimate"]): r for r in pe.analyse(pe.load(None))}
    aa = rows[("A/A 25 µs–2 ms", "hl")], rows[("A/A 25 µs–2 ms", "min")], rows[("A/A 25 µs–2 ms", "hl+tost")]
    # paired Hodges–Lehmann beats each side's minimum on fast benchmarks; TOST needs fewer pairs
    assert aa[0]["verdicts"].get("unchanged", 0) > aa[1]["verdicts"].get("unchanged", 0)
    assert sum(aa[2]["pairs"]) < sum(aa[0]["pairs"])
    assert "| A/A 25 µs–2 ms | hl+tost |" in pe.render(list(rows.values()))
