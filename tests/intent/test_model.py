"""runner.intent.model: the learned intent model (gate + strategy head) and ``classify``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from runner.intent import STRATEGIES, UNKNOWN, classify, model
from runner.intent.features import extract


def test_stored_model_is_this_format_over_the_strategies():
    data = model.model()
    assert data["format"] == model.FORMAT and data["strategy"]["classes"] == list(STRATEGIES)
    assert len(data["strategy"]["intercept"]) == len(STRATEGIES)
    assert all(len(row) == len(STRATEGIES) for row in data["strategy"]["coef"].values())
    assert set(data["vocabulary"]) == set(model.BLOCKS)
    assert 0.0 < model.gate_threshold() < 1.0
    assert 0.5 <= model.probable_above() <= 0.95
    # The stored words are the ones with coefficients, and nothing else.
    words = {k for block in data["vocabulary"].values() for k in block}
    assert words <= set(data["gate"]["coef"]) | set(data["strategy"]["coef"])


def test_missing_or_stale_model_file_is_a_clear_error(tmp_path: Path):
    model.model.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="rebuild it with evaluation/train_intent_model.py"):
            model.model(tmp_path / "missing.json")
        stale = tmp_path / "stale.json"
        stale.write_text(json.dumps({"format": model.FORMAT, "vocabulary": {"text": {}},
                                     "strategy": {"classes": ["kernel_fusion"]}}))
        with pytest.raises(RuntimeError, match="not format"):
            model.model(stale)
    finally:
        model.model.cache_clear()


def test_vector_is_sublinear_tfidf_normalised_per_block_and_weighted():
    feats = {"text": {"t:fuse": 3, "b:kernel": 1, "t:unseen": 5}, "diff": {"+:num_warps": 1},
             "rules": {"r:t:kernel_fusion": 0.5}}
    vocabulary = {"text": {"t:fuse": 2.0, "b:kernel": 1.0}, "diff": {"+:num_warps": 3.0}}
    x = model.vector(feats, vocabulary, {"text": 1.0, "diff": 0.5, "rules": 2.0})
    fuse, kernel = (1 + math.log(3)) * 2.0, 1.0
    norm = math.hypot(fuse, kernel)
    assert x["t:fuse"] == pytest.approx(fuse / norm) and x["b:kernel"] == pytest.approx(kernel / norm)
    assert "t:unseen" not in x                       # out of the vocabulary: dropped
    assert x["+:num_warps"] == pytest.approx(0.5)    # alone in its block: norm 1, times the weight
    assert x["r:t:kernel_fusion"] == pytest.approx(1.0)


def test_predict_is_a_sigmoid_gate_and_a_softmax_head():
    data = {"gate": {"intercept": -1.0, "coef": {"a": 2.0}},
            "strategy": {"classes": ["kernel_fusion", "autotuning"], "intercept": [0.0, 1.0],
                         "coef": {"a": [3.0, 0.0], "b": [0.0, -1.0]}}}
    p_opt, conditional = model.predict({"a": 1.0, "b": 2.0, "c": 9.0}, data)
    assert p_opt == pytest.approx(1 / (1 + math.exp(-1.0)))
    z = [3.0, 1.0 - 2.0]
    assert conditional["kernel_fusion"] == pytest.approx(math.exp(z[0]) / (math.exp(z[0]) + math.exp(z[1])))
    assert sum(conditional.values()) == pytest.approx(1.0)
    assert model.contributions({"a": 1.0, "b": 2.0}, "kernel_fusion", data) == [("a", 3.0)]
    assert model.contributions({"a": 1.0, "b": 2.0}, "autotuning", data) == []


def test_signal_names_of_model_features():
    assert model.signal("t:persist") == 'title (stemmed): "persist"'
    assert model.signal("b2:cuda graph") == 'text (stemmed): "cuda graph"'
    assert model.signal("+:num_warps") == '+code: "num_warps"'
    assert model.signal("p:csrc") == 'file: "csrc"'
    assert model.signal("r:t:kernel_fusion") is None


def test_classify_result_shape_and_consistency():
    result = classify(title="[Perf] Fuse the bias add and GELU into the GEMM epilogue",
                      body="One kernel instead of three; 1.3x faster MLP forward.")
    assert set(result) == {"strategy", "confidence", "optimisation", "signals", "candidates"}
    assert result["strategy"] == "kernel_fusion"
    assert result["optimisation"] >= model.gate_threshold()
    first = result["candidates"][0]
    assert first["strategy"] == result["strategy"] and first["confidence"] == result["confidence"]
    assert result["confidence"] <= result["optimisation"] + 1e-3     # joint <= gate
    confidences = [c["confidence"] for c in result["candidates"]]
    assert confidences == sorted(confidences, reverse=True) and len(confidences) <= 5
    assert all(model.MIN_CANDIDATE <= c <= 1.0 for c in confidences)
    assert result["signals"] and result["signals"][0].startswith("title:")


@pytest.mark.parametrize("title, body, strategy", [
    ("Remove the .item() sync from the sampler loop", "The host no longer waits for the GPU each step.",
     "host_sync_elimination"),
    ("Capture the decode step in a CUDA graph", "Replays the graph to cut the launch overhead.",
     "launch_overhead_reduction"),
    ("Vectorize the RMSNorm kernel with 128-bit loads", "", "vectorization"),
    ("Tune num_warps and num_stages of the attention kernel for H100", "", "launch_config_tuning"),
])
def test_clear_optimisations_are_named(title, body, strategy):
    assert classify(title=title, body=body)["strategy"] == strategy


@pytest.mark.parametrize("title", [
    "Fix typo in the README",
    "Bump version to 0.4.1",
    "Add unit tests for the fused Adam optimizer",
    "Revert \"Use persistent kernels for the MoE GEMM\"",
    "Fix illegal memory access in the paged attention kernel",
])
def test_non_optimisations_stay_unknown(title):
    result = classify(title=title)
    assert result["strategy"] == UNKNOWN and result["confidence"] == 0.0 and result["signals"] == []
    assert result["optimisation"] < model.gate_threshold()


def test_the_diff_counts():
    """Removed ``.item()`` and ``synchronize()`` calls raise host_sync_elimination in the strategy
    head (from rank 16 to the top 4 behind a vague title). They do not decide alone: on real pull
    requests such code is often incidental (RESULTS_intent.md, "code evidence")."""
    diff = ("diff --git a/model/sampler.py b/model/sampler.py\n--- a/model/sampler.py\n+++ b/model/sampler.py\n"
            "@@ -10,3 +10,3 @@\n-    n = int(mask.sum().item())\n-    torch.cuda.synchronize()\n"
            "+    n = mask.sum()\n")
    data = model.model()
    for title in ("Speed up the sampler", "Sampler cleanup"):
        ranks = []
        for d in ("", diff):
            x = model.vector(extract(title=title, diff=d), data["vocabulary"], data["weights"])
            _, conditional = model.predict(x, data)
            ranks.append(sorted(conditional, key=conditional.get, reverse=True).index("host_sync_elimination"))
        assert ranks[1] < ranks[0] and ranks[1] <= 3, (title, ranks)
    with_diff = classify(title="Sampler cleanup", diff=diff)
    assert any(c["strategy"] == "host_sync_elimination" and any(".item()" in s for s in c["signals"])
               for c in with_diff["candidates"])


def test_rule_signals_come_first_then_model_words():
    result = classify(title="Use warp shuffles for the block reduction in softmax")
    assert result["strategy"] == "warp_level_reduction"
    assert result["signals"][0].startswith("title:") and "shuffle" in result["signals"][0].lower()
    assert len(result["signals"]) <= 8


def test_model_signals_skip_one_letter_words_and_repeats():
    result = classify(title="Speed up the pairwise distance with a cheaper algorithm",
                      body="Uses the matmul expansion of the squared distance; s is unchanged.")
    quoted = [s.split(": ", 1)[1].strip('"') for s in result["signals"] if s.startswith(("text", "title (stemmed)"))]
    assert quoted and all(len(q) >= 3 for q in quoted)
    assert len(set(result["signals"])) == len(result["signals"])


def test_signals_are_unique_and_skip_code_keywords():
    data = {"strategy": {"classes": ["kernel_fusion"],
                         "coef": {"+:self": [2.0], "+:num_warps": [1.0], "t:fuse": [0.5], "-:x": [3.0]}}}
    x = {"+:self": 1.0, "+:num_warps": 1.0, "t:fuse": 1.0, "-:x": 1.0}
    rule_signals = ['title: "fuse"', 'title: "fuse"', 'not an optimisation? title: "fix"']
    assert model._signals(rule_signals, x, "kernel_fusion", data) == [
        'title: "fuse"', '+code: "num_warps"', 'not an optimisation? title: "fix"']
