"""runner.intent.calibration and classify's calibrated confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.intent import UNKNOWN, calibration, classify, classify_rules
from runner.intent.classifier import evidence


def test_model_file_matches_the_features():
    data = calibration.model()
    assert data["features"] == list(calibration.FEATURES)
    assert len(data["coef"]) == len(calibration.FEATURES)
    assert 0.5 <= data["probable_above"] <= 0.95


def test_bad_model_file_is_a_clear_error(tmp_path: Path):
    calibration.model.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="rebuild it with evaluation/train_intent_model.py"):
            calibration.model(tmp_path / "missing.json")
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"features": ["x"], "coef": [1.0], "intercept": 0.0}))
        with pytest.raises(RuntimeError, match="does not match"):
            calibration.model(bad)
    finally:
        calibration.model.cache_clear()


def test_features_of_one_candidate():
    ev = evidence(title="Fix crash in the fused softmax kernel", diff="")
    assert ev.cues
    ev = evidence(title="[CUDA] Fuse the bias add into the GEMM epilogue")
    values = dict(zip(calibration.FEATURES, calibration.features(ev, "kernel_fusion")))
    assert values["in_title"] == 1.0 and values["rank_first"] == 1.0 and values["cue"] == 0.0
    assert values["code_share"] == 0.0 and 0.5 < values["margin"] <= 1.0


def test_stronger_clearer_evidence_is_more_confident():
    data = calibration.model()
    weak = [0.5, 0.55, 0.0, 1.0, 0.0, 1.0, 1.0]
    strong = [2.0, 1.0, 0.0, 1.0, 0.0, 0.7, 1.0]
    assert calibration.probability(weak, data) < calibration.probability(strong, data)
    with_cue = strong[:4] + [1.0] + strong[5:]
    assert calibration.probability(with_cue, data) < calibration.probability(strong, data)


def test_classify_keeps_the_rules_decision_with_calibrated_confidences():
    kwargs = {"title": "[Perf] Remove a GPU<->CPU sync from the sampler", "body": "No more .item() per step."}
    calibrated, rules = classify(**kwargs), classify_rules(**kwargs)
    assert calibrated["strategy"] == rules["strategy"] == "host_sync_elimination"
    assert [c["strategy"] for c in calibrated["candidates"]] == [c["strategy"] for c in rules["candidates"]]
    ev = evidence(**kwargs)
    assert calibrated["confidence"] == round(calibration.confidence(ev, "host_sync_elimination"), 3)
    assert 0.0 < calibrated["confidence"] <= 1.0
    assert all(0.0 <= c["confidence"] <= 1.0 for c in calibrated["candidates"])


def test_unknown_keeps_confidence_zero_but_candidates_are_calibrated():
    result = classify(title="Fix race in the atomic histogram kernel")
    assert result["strategy"] == UNKNOWN and result["confidence"] == 0.0 and result["signals"] == []
    assert result["candidates"] and result["candidates"][0]["confidence"] < calibration.probable_above()
