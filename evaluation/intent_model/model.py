"""The learned intent model: which strategy a change intends, from its words, its diff and the
rules' evidence; two candidates, each with the evidence a reader can check, and how often such
an answer was right on held-out pull requests.

Two linear heads over the features of ``features.py`` (tf-idf of title / body words, of diff
tokens and of the title's character 4-grams, each block L2-normalised, plus the hand rules'
scores per strategy and their non-optimisation cues):

* the **gate**: the probability that the change is an optimisation at all (a logistic
  regression fitted with balanced class weights, so the share of non-optimisations in the
  training corpus does not set the prior);
* the **strategy head**: the probability of each of the 22 strategies given that the change is
  an optimisation (a multinomial logistic regression fitted on the optimisations only, its
  logits blended with a complement naive Bayes's over the same input; both are linear, so the
  file holds one set of coefficients).

The answer (``classify``) has three forms:

* ``probably``: the head's best strategy, when the gate reaches ``gate_threshold``, its
  confidence (``gate x P(strategy | optimisation)``) reaches ``probable_above`` (the level from
  which at least ``probable_precision``, 90 %, of such answers were right on held-out pull
  requests) and a rule or code match backs it;
* ``either``: the gate reaches its threshold, but not the rest: "X or Y", the first two
  candidates;
* ``unknown``: the gate is below its threshold. The two candidates are still listed.

The diff is read as its excerpt (``diff.excerpt``: library source hunks first, 60 changed
lines), as in the training corpus. A candidate's evidence is only what a reader can check: the
hand rules' text matches (a phrase of the title or description) and code matches (the changed
line that carries a mechanism token, library source first). Rules weighted below 1.0 are
ambiguous words by design (rules.py) and are not quoted; nor are the model's own word features.

``rates`` in the model file say how often answers were right on held-out pull requests
(out-of-fold predictions of evaluation/train_intent_model.py, folds by repository, over the
real pull requests of rounds 2 to 5 outside the blind split): per confidence bin, the named strategy (``top1``) and
"one of the first two" (``top2``); per gate bin below the threshold, the share of
non-optimisations. ``rate_of`` looks a result up; ``answer_text`` says it in words.

The model is plain numbers in ``model.json`` beside this file (vocabulary with idf weights,
coefficients, thresholds, rates), fitted by evaluation/train_intent_model.py with scikit-learn;
loading and scoring need no third-party package. Pure functions; the file is read once.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from runner.intent import diff as _diff
from runner.intent.classifier import MAX_CANDIDATES, MAX_SIGNALS, Evidence, evidence
from .features import extract
from runner.intent.rules import STRATEGIES, UNKNOWN

MODEL_PATH = Path(__file__).with_name("model.json")
FORMAT = 2
BLOCKS = ("text", "diff", "chars")
#: Candidates listed whatever their share: the two a reader weighs ("X or Y").
SHOWN = 2
#: Further candidates (up to ``MAX_CANDIDATES``) are listed only from this share of the head
#: (below it they are noise of the softmax).
MIN_CANDIDATE = 0.02
#: A gate this close to its threshold is reported with the threshold ("0.48, named from 0.50").
NEAR_GATE = 0.1
#: Rule matches below this weight are ambiguous words by design (rules.py: "register", "reduce",
#: "arch"); they count in the scores but are never quoted as evidence.
MIN_EVIDENCE_WEIGHT = 1.0
#: A quoted changed line is cut to this many characters around its mechanism token.
LINE_WIDTH = 100


@lru_cache(maxsize=1)
def model(path: Path = MODEL_PATH) -> dict:
    """The stored model, checked: ``{"weights", "vocabulary", "gate", "strategy", "gate_threshold",
    "probable_above", "rates", ...}`` (module docstring).

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
    if (data.get("format") != FORMAT or classes != list(STRATEGIES) or set(data.get("vocabulary") or ()) != set(BLOCKS)
            or not data.get("rates")):
        raise RuntimeError(f"intent model {path} is not format {FORMAT} over the strategies of rules.py; "
                           "rebuild it with evaluation/train_intent_model.py")
    return data


def vector(feats: dict, vocabulary: dict, weights: dict) -> dict[str, float]:
    """The model's input vector of one change.

    Args:
        feats: ``features.extract`` of the change (``{"text", "diff", "chars": counts, "rules": values}``).
        vocabulary: block -> {feature: idf}; features outside it are dropped.
        weights: block weight of each of ``BLOCKS`` and of ``rules``.

    Returns:
        feature -> value: per block, sublinear tf (1 + log count) x idf, L2-normalised, times the
        block weight; the rule features times the ``rules`` weight.
    """
    out: dict[str, float] = {}
    for block in BLOCKS:
        idf = vocabulary[block]
        values = {k: (1.0 + math.log(c)) * idf[k] for k, c in feats.get(block, {}).items() if k in idf and c > 0}
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


def evidence_of(ev: Evidence, strategy: str, limit: int = MAX_SIGNALS) -> list[str]:
    """What a reader can check for ``strategy`` in a change's rule evidence ``ev``, strongest first.

    Code matches in library source come first (``+code csrc/k.cu: <the changed line>``), then
    text matches of the title, then of the description, labels and commit messages
    (``title: "fuse"``), then code matches in other files. Only rules of weight >=
    ``MIN_EVIDENCE_WEIGHT``; at most ``limit`` items, each quoted once.
    """
    code = [m for m in (ev.code_lines or {}).get(strategy, []) if m.weight >= MIN_EVIDENCE_WEIGHT]
    text = [m for m in (ev.text_matches or {}).get(strategy, []) if m.weight >= MIN_EVIDENCE_WEIGHT]
    ranked: list[tuple[tuple, str]] = []
    for m in code:
        rank = 0 if _diff.file_rank(m.path) == 0 and m.where == "code" else 3
        kind = "code" if m.where == "code" else m.where
        at = f" {m.path}" if m.path else ""
        ranked.append(((rank, -m.weight * m.factor), f"{m.side}{kind}{at}: {_around(m.line, m.token)}"))
    for m in text:
        ranked.append(((1 if m.source == "title" else 2, -m.weight), f'{m.source}: "{_clip(m.phrase)}"'))
    out = []
    for _, item in sorted(ranked, key=lambda r: r[0]):
        if item not in out:
            out.append(item)
    return out[:limit]


def classify(title: str = "", body: str = "", labels: Iterable[str] = (),
             commit_messages: Iterable[str] = (), diff: str = "") -> dict:
    """The strategy a change intends: two candidates with their evidence, and how often such an
    answer was right on held-out pull requests.

    Args:
        title, body: the PR's title and description (markdown is fine).
        labels: PR labels, e.g. ``("performance", "module: cuda")``.
        commit_messages: full messages of the commits between base and head.
        diff: a unified diff of the change (``git diff base head``); may be empty. It is read as
            its excerpt (``diff.excerpt``).

    Returns:
        ``{"strategy", "confidence", "optimisation", "gate_threshold", "answer", "rate", "signals",
        "cues", "candidates"}``:

        * ``strategy``: an id of STRATEGIES.md, the head's best, when the gate reaches
          ``gate_threshold``; else ``"unknown"`` (``confidence`` 0.0, ``signals`` empty);
        * ``confidence`` in [0, 1]: ``gate x P(strategy | optimisation)``;
        * ``optimisation``: the gate, the probability that the change is an optimisation at all;
        * ``answer``: ``"probably"``, ``"either"`` or ``"unknown"`` (module docstring);
        * ``rate``: ``rate_of`` this answer: how often such answers were right on held-out pull
          requests;
        * ``signals``: the evidence of the named strategy (``evidence_of``);
        * ``cues``: what says the change is not an optimisation (``'title: "fix"'``);
        * ``candidates``: the first ``SHOWN`` strategies of the head always, further ones (up to 5)
          from a share of ``MIN_CANDIDATE``, best first, each ``{"strategy", "what" (its line of
          STRATEGIES.md), "share" (P(strategy | optimisation)), "confidence" (gate x share),
          "signals" (its evidence)}``.

    Raises:
        RuntimeError: ``model.json`` is missing or stale (``model``).
    """
    commit_messages = [str(m) for m in commit_messages]
    labels = [str(label) for label in labels]
    cut = _diff.excerpt(diff)
    data = model()
    ev = evidence(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=cut)
    x = vector(extract(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=cut, ev=ev),
               data["vocabulary"], data["weights"])
    p_opt, conditional = predict(x, data)
    ranked = sorted(STRATEGIES, key=lambda s: -conditional[s])
    candidates = [{"strategy": s, "what": STRATEGIES[s][1], "share": round(conditional[s], 3),
                   "confidence": round(p_opt * conditional[s], 3), "signals": evidence_of(ev, s)}
                  for i, s in enumerate(ranked[:MAX_CANDIDATES]) if i < SHOWN or conditional[s] >= MIN_CANDIDATE]
    threshold = float(data["gate_threshold"])
    named = p_opt >= threshold
    best = candidates[0]
    if not named:
        answer = UNKNOWN
    elif best["confidence"] >= float(data["probable_above"]) and best["signals"]:
        answer = "probably"
    else:
        answer = "either"
    result = {"strategy": best["strategy"] if named else UNKNOWN,
              "confidence": best["confidence"] if named else 0.0,
              "optimisation": round(p_opt, 3), "gate_threshold": threshold, "answer": answer,
              "signals": list(best["signals"]) if named else [],
              "cues": [str(c) for c in ev.cues], "candidates": candidates}
    result["rate"] = rate_of(result, data)
    return result


def rate_of(result: dict, data: dict | None = None) -> dict | None:
    """How often answers like ``result`` were right on held-out pull requests (``rates`` of the
    model file): ``{"kind", "right", "of", "low", "high"}``.

    ``kind`` ``"top1"`` (a ``probably`` answer: the named strategy right, among held-out answers
    that a rule or code match backed), ``"top2"`` (an
    ``either`` answer: the label one of the first two candidates), ``"unknown"`` (the change was
    not an optimisation); ``right`` of ``of`` held-out answers in the bin [``low``, ``high``) of
    the confidence (``top1``, ``top2``) or of the gate (``unknown``). None for a result without
    an ``answer`` (stored by an older perfgate) or an empty bin.
    """
    data = data or model()
    rates = data["rates"]
    answer = result.get("answer")
    if answer in ("probably", "either"):
        edges, value = rates["confidence_edges"], float(result.get("confidence") or 0.0)
        kind = "top1" if answer == "probably" else "top2"
        counts, of = (rates["backed_top1"], rates["backed"]) if answer == "probably" else (rates["top2"], rates["named"])
    elif answer == UNKNOWN:
        edges, value, kind = rates["gate_edges"], float(result.get("optimisation") or 0.0), "unknown"
        counts, of = rates["not_optimisations"], rates["below"]
    else:
        return None
    for i, (low, high) in enumerate(zip(edges, edges[1:])):
        if low <= value < high or (i == len(edges) - 2 and value >= high):
            if not of[i]:
                return None
            return {"kind": kind, "right": int(counts[i]), "of": int(of[i]), "low": low, "high": min(high, 1.0)}
    return None


def answer_text(result: dict) -> dict:
    """The words of a ``classify`` result (or of a results.json ``intent``) for a reader.

    Returns:
        ``{"answer", "headline", "rate", "gate"}``: ``answer`` ``probably`` / ``either`` /
        ``unknown``; ``headline`` "probably X", "X or Y" or "unknown"; ``rate`` the sentence of
        ``result["rate"]`` ("right 9 times in 10 at this confidence on 148 held-out pull
        requests"), "" without one; ``gate`` the gate beside its threshold when it is within
        ``NEAR_GATE`` of it or the answer is unknown ("optimisation 0.48; a strategy is named
        from 0.50"), else "".
        A result stored by an older perfgate (no ``answer``) reads as ``either`` when it named a
        strategy: its confidence was not measured the same way, so it is never "probably".
    """
    strategy = strategy_of(result.get("strategy"))
    answer = result.get("answer")
    if answer not in ("probably", "either", UNKNOWN):
        answer = "either" if strategy in STRATEGIES else UNKNOWN
    stored = result.get("candidates")
    names = [c["strategy"] for c in stored if isinstance(c, dict) and strategy_of(c.get("strategy")) != UNKNOWN] \
        if isinstance(stored, list) else []
    if strategy in STRATEGIES and strategy not in names[:1]:
        names = [strategy] + [n for n in names if n != strategy]
    if not names:
        answer = UNKNOWN
    if answer == "probably":
        headline = f"probably {names[0]}"
    elif answer == "either":
        headline = " or ".join(names[:SHOWN]) if len(names) > 1 else f"possibly {names[0]}"
    else:
        headline = UNKNOWN
    rate = result.get("rate") if isinstance(result.get("rate"), dict) else {}
    right, of = _count(rate.get("right")), _count(rate.get("of"))
    words = ""
    # A rate is printed only for the answer it measures (top1: "probably", top2: "X or Y").
    if of and right is not None and right <= of and rate.get("kind") == {"probably": "top1", "either": "top2",
                                                                          UNKNOWN: UNKNOWN}[answer]:
        where = "at this gate value" if rate["kind"] == UNKNOWN else "at this confidence"
        what = {"top1": "right", "top2": "one of the two right", UNKNOWN: "not an optimisation"}[rate["kind"]]
        words = f"{what} {round(10 * right / of)} times in 10 {where} on {of} held-out pull requests"
    gate = ""
    chance, threshold = _fraction(result.get("optimisation")), _fraction(result.get("gate_threshold"))
    if chance is not None and threshold is not None and (answer == UNKNOWN or abs(chance - threshold) <= NEAR_GATE):
        gate = f"optimisation {chance:.2f}; a strategy is named from {threshold:.2f}"
    return {"answer": answer, "headline": headline, "rate": words, "gate": gate}


def _count(value) -> int | None:
    """A non-negative whole number from stored data (a results.json may be any JSON), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def strategy_of(value) -> str:
    """A strategy id of STRATEGIES.md from stored data, else ``unknown``."""
    return value if isinstance(value, str) and value in STRATEGIES else UNKNOWN


def _fraction(value) -> float | None:
    """A number in [0, 1] from stored data, else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)
    return None


def _around(line: str, token: str, width: int = LINE_WIDTH) -> str:
    """``line`` without its indentation, cut to ``width`` characters around ``token``."""
    text = " ".join(line.split())
    if len(text) <= width:
        return text
    at = max(0, text.find(token))
    start = max(0, min(at - width // 3, len(text) - width))
    out = text[start:start + width]
    return ("…" if start else "") + out + ("…" if start + width < len(text) else "")


def _clip(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def gate_threshold() -> float:
    """Gate probability from which a change is named a strategy (below: ``unknown``)."""
    return float(model()["gate_threshold"])


def probable_above() -> float:
    """Confidence from which a named strategy backed by a rule or code match is "probably X"."""
    return float(model()["probable_above"])
