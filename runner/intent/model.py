"""The learned intent model: which strategy a change intends, from its words, its diff and the
rules' evidence, with a confidence measured on labelled pull requests.

Two linear heads over the features of ``features.py`` (tf-idf of title / body words and of diff
tokens, each block L2-normalised, plus the hand rules' scores per strategy and their
non-optimisation cues):

* the **gate**: the probability that the change is an optimisation at all (a logistic
  regression fitted with balanced class weights, so the share of non-optimisations in the
  training corpus does not set the prior);
* the **strategy head**: the probability of each of the 22 strategies given that the change is
  an optimisation (a multinomial logistic regression fitted on the optimisations only).

A change is named the strategy head's best strategy when the gate reaches ``gate_threshold``,
else ``unknown``. The confidence of a strategy is ``gate x P(strategy | optimisation)``.
``probable_above`` is the lowest confidence from which at least ``probable_precision`` of the
named strategies were right out of fold (evaluation/RESULTS_intent.md gives the blind figures);
the report says "probably X" only from there.

The model is plain numbers in ``model.json`` beside this file (vocabulary with idf weights,
coefficients, thresholds), fitted by evaluation/train_intent_model.py with scikit-learn; loading
and scoring need no third-party package. Pure functions; the file is read once.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from .classifier import MAX_CANDIDATES, MAX_SIGNALS, evidence
from .features import extract
from .rules import STRATEGIES, UNKNOWN

MODEL_PATH = Path(__file__).with_name("model.json")
FORMAT = 1
BLOCKS = ("text", "diff")
#: Candidates below this confidence are not listed (they are noise of the softmax).
MIN_CANDIDATE = 0.02
#: Model features quoted as signals of a strategy, after the rules' own signals.
MODEL_SIGNALS = 3
#: Code tokens too common to explain anything (keywords and the commonest names of C++ / Python).
CODE_NOISE = frozenset("""self get set include int void const auto def return if else for while in not and or
none true false std size_t float double bool char struct class static inline template typename import from
as with new delete this args kwargs data value values size len range print""".split())
#: Feature-name prefixes and how a signal names them (``t2:`` / ``b2:`` are word pairs).
_SIGNAL_PREFIX = {"t": "title (stemmed)", "t2": "title (stemmed)", "b": "text (stemmed)", "b2": "text (stemmed)",
                  "+": "+code", "-": "-code", "p": "file"}


@lru_cache(maxsize=1)
def model(path: Path = MODEL_PATH) -> dict:
    """The stored model, checked: ``{"weights", "vocabulary", "gate", "strategy", "gate_threshold",
    "probable_above", ...}`` (module docstring).

    Raises:
        RuntimeError: the file is missing, unreadable, or not this module's format (rebuild it
            with evaluation/train_intent_model.py).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"intent model {path} unreadable ({exc}); "
                           "rebuild it with evaluation/train_intent_model.py") from None
    classes = data.get("strategy", {}).get("classes")
    if data.get("format") != FORMAT or classes != list(STRATEGIES) or not data.get("vocabulary"):
        raise RuntimeError(f"intent model {path} is not format {FORMAT} over the strategies of rules.py; "
                           "rebuild it with evaluation/train_intent_model.py")
    return data


def vector(feats: dict, vocabulary: dict, weights: dict) -> dict[str, float]:
    """The model's input vector of one change.

    Args:
        feats: ``features.extract`` of the change (``{"text": counts, "diff": counts, "rules": values}``).
        vocabulary: block -> {feature: idf}; features outside it are dropped.
        weights: block weight of ``text``, ``diff`` and ``rules``.

    Returns:
        feature -> value: per block, sublinear tf (1 + log count) x idf, L2-normalised, times the
        block weight; the rule features times the ``rules`` weight.
    """
    out: dict[str, float] = {}
    for block in BLOCKS:
        idf = vocabulary[block]
        values = {k: (1.0 + math.log(c)) * idf[k] for k, c in feats[block].items() if k in idf and c > 0}
        norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
        out.update({k: weights[block] * v / norm for k, v in values.items()})
    out.update({k: weights["rules"] * v for k, v in feats["rules"].items()})
    return out


def _softmax(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(v - top) for v in z]
    total = sum(e)
    return [v / total for v in e]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


def predict(x: dict[str, float], data: dict | None = None) -> tuple[float, dict[str, float]]:
    """``(gate, {strategy: P(strategy | optimisation)})`` of an input vector ``x`` (``vector``)."""
    data = data or model()
    gate = data["gate"]
    p_opt = _sigmoid(gate["intercept"] + sum(v * gate["coef"].get(k, 0.0) for k, v in x.items()))
    head = data["strategy"]
    z = list(head["intercept"])
    for k, v in x.items():
        row = head["coef"].get(k)
        if row:
            z = [zi + v * c for zi, c in zip(z, row)]
    return p_opt, dict(zip(head["classes"], _softmax(z)))


def contributions(x: dict[str, float], strategy: str, data: dict | None = None) -> list[tuple[str, float]]:
    """Features of ``x`` that raise ``strategy``'s score the most: ``[(feature, value x coef)]``,
    largest first, positive only."""
    data = data or model()
    index = data["strategy"]["classes"].index(strategy)
    out = [(k, v * row[index]) for k, v in x.items() if (row := data["strategy"]["coef"].get(k))]
    return sorted(((k, c) for k, c in out if c > 0), key=lambda kc: -kc[1])


def signal(feature: str) -> str | None:
    """A reader's name of a model feature, e.g. ``'title (stemmed): "persist kernel"'`` for
    ``t2:persist kernel`` (words are stemmed: "persistent" is "persist"), ``'+code: "num_warps"'``;
    None for the rule features (their rules say it)."""
    prefix, _, name = feature.partition(":")
    if prefix not in _SIGNAL_PREFIX:
        return None
    return f'{_SIGNAL_PREFIX[prefix]}: "{name}"'


def classify(title: str = "", body: str = "", labels: Iterable[str] = (),
             commit_messages: Iterable[str] = (), diff: str = "") -> dict:
    """The strategy a change most likely intends, with a confidence measured on real pull requests.

    Args:
        title, body: the PR's title and description (markdown is fine).
        labels: PR labels, e.g. ``("performance", "module: cuda")``.
        commit_messages: full messages of the commits between base and head.
        diff: a unified diff of the change (``git diff base head``); may be empty.

    Returns:
        ``{"strategy", "confidence", "optimisation", "signals", "candidates"}``: ``strategy`` is
        an id from STRATEGIES.md, or ``"unknown"`` when the gate is below ``gate_threshold``
        (then ``confidence`` is 0.0 and ``signals`` empty); ``confidence`` in [0, 1], the
        probability of the named strategy (``gate x P(strategy | optimisation)``);
        ``optimisation`` the gate, the probability that the change is an optimisation at all;
        ``signals`` short strings naming what matched and where: the hand rules' signals of
        the strategy first (``'title: "fuse"'``, ``'+code csrc/k.cu: "__launch_bounds__"'``),
        then the words and code tokens that raised its score in the model most
        (``'title (stemmed): "persist"'``, ``'+code: "num_warps"'``); ``candidates`` up to 5 strategies
        with confidence >= ``MIN_CANDIDATE``, best first, each ``{"strategy", "confidence",
        "signals"}`` (a named strategy is the first).

    Raises:
        RuntimeError: ``model.json`` is missing or stale (``model``).
    """
    commit_messages = [str(m) for m in commit_messages]
    labels = [str(label) for label in labels]
    data = model()
    ev = evidence(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=diff)
    x = vector(extract(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=diff, ev=ev),
               data["vocabulary"], data["weights"])
    p_opt, conditional = predict(x, data)
    ranked = sorted(STRATEGIES, key=lambda s: -conditional[s])
    candidates = [{"strategy": s, "confidence": round(p_opt * conditional[s], 3),
                   "signals": _signals(ev.signals.get(s, []), x, s, data)}
                  for s in ranked[:MAX_CANDIDATES] if p_opt * conditional[s] >= MIN_CANDIDATE]
    if p_opt < float(data["gate_threshold"]) or not candidates:
        return {"strategy": UNKNOWN, "confidence": 0.0, "optimisation": round(p_opt, 3), "signals": [],
                "candidates": candidates}
    best = candidates[0]
    return {"strategy": best["strategy"], "confidence": best["confidence"], "optimisation": round(p_opt, 3),
            "signals": list(best["signals"]), "candidates": candidates}


def _signals(rule_signals: list[str], x: dict[str, float], strategy: str, data: dict) -> list[str]:
    """The rules' signals of ``strategy``, then up to ``MODEL_SIGNALS`` of its strongest model features."""
    out = [s for s in rule_signals if not s.startswith("not an optimisation?")]
    quoted = " ".join(out).lower()
    added = 0
    for feature, _ in contributions(x, strategy, data):
        text = signal(feature)
        name = feature.partition(":")[2].strip(".(<")
        if text is None or len(name) < 3 or name in quoted or name.lower() in CODE_NOISE:
            continue                                 # no short words, keywords or repeats
        out.append(text)
        added += 1
        if added == MODEL_SIGNALS:
            break
    cues = [s for s in rule_signals if s.startswith("not an optimisation?")]
    unique = list(dict.fromkeys(out))
    return (unique[:MAX_SIGNALS - len(cues)] + cues)[:MAX_SIGNALS]


def gate_threshold() -> float:
    """Gate probability from which a change is named a strategy (below: ``unknown``)."""
    return float(model()["gate_threshold"])


def probable_above() -> float:
    """Confidence from which a named strategy may be reported as "probably X"."""
    return float(model()["probable_above"])
