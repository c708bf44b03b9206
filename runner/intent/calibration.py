"""Calibrated confidence of an intent candidate: a logistic model over the rule evidence.

The rules decide which strategy a change names (``classifier.evidence``); this module says how
likely a candidate is to be the change's strategy. The model is a logistic regression over a
few features of one candidate's evidence (``FEATURES``), fitted on labelled pull requests by
evaluation/train_intent_model.py and stored in ``calibration.json`` beside this file (plain
numbers: loading needs no third-party package and no network).

``probable_above`` in that file is the confidence from which the report may say "probably X":
the lowest level at which at least ``probable_precision`` of the named strategies of the
training pull requests were right (evaluation/RESULTS_intent.md gives the blind figures).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).with_name("calibration.json")
#: Feature names, in the order of the stored coefficients (after the intercept).
FEATURES = ("log_score", "margin", "code_share", "in_title", "cue", "log_candidates", "rank_first")


def features(ev: Any, strategy: str) -> list[float]:
    """Features of ``strategy``'s evidence in ``ev`` (a ``classifier.Evidence``), ``FEATURES`` order.

    ``log_score`` = log(1 + total); ``margin`` = total / (total + best other total);
    ``code_share`` = code part / total; ``in_title`` = 1 when the title alone has evidence;
    ``cue`` = 1 when the change carries a non-optimisation cue; ``log_candidates`` =
    log(1 + number of strategies with evidence); ``rank_first`` = 1 for the top-ranked one.
    """
    score = ev.scores[strategy]
    other = ev.best_other(strategy)
    return [
        math.log1p(score),
        score / (score + other) if score + other > 0 else 0.0,
        ev.code.get(strategy, 0.0) / score if score > 0 else 0.0,
        1.0 if ev.title.get(strategy, 0.0) > 0 else 0.0,
        1.0 if ev.cues else 0.0,
        math.log1p(len(ev.scores)),
        1.0 if ev.ranked and ev.ranked[0] == strategy else 0.0,
    ]


@lru_cache(maxsize=1)
def model(path: Path = MODEL_PATH) -> dict:
    """The stored model: ``{"features", "intercept", "coef", "probable_above", ...}``.

    Raises:
        RuntimeError: the file is missing or does not match ``FEATURES`` (rebuild it with
            evaluation/train_intent_model.py).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"intent calibration model {path} unreadable ({exc}); "
                           "rebuild it with evaluation/train_intent_model.py") from None
    if tuple(data.get("features", ())) != FEATURES or len(data.get("coef", ())) != len(FEATURES):
        raise RuntimeError(f"intent calibration model {path} does not match the features of calibration.py; "
                           "rebuild it with evaluation/train_intent_model.py")
    return data


def probability(values: list[float], data: dict | None = None) -> float:
    """Logistic probability of a feature vector under the stored (or given) model."""
    data = data or model()
    z = data["intercept"] + sum(c * x for c, x in zip(data["coef"], values))
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


def confidence(ev: Any, strategy: str) -> float:
    """Calibrated probability that ``strategy`` is the strategy of the change with evidence ``ev``."""
    return probability(features(ev, strategy))


def probable_above() -> float:
    """Confidence from which a named strategy may be reported as "probably X"."""
    return float(model()["probable_above"])
