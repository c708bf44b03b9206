"""Features of a change for the learned intent model (``model.py``): words of its text, tokens of
its diff, and the rule scores of ``classifier.py``. evaluation/train_intent_model.py fits the
model on these features of labelled pull requests; ``model.py`` computes the same features at
run time, so both share this module.

A change becomes three blocks of named features, each a ``{name: value}`` dict:

* ``text``: lower-cased word unigrams and bigrams of the title (``t:``, ``t2:``) and of the
  body, labels and commit messages (``b:``, ``b2:``), with a light suffix stemming so that
  "fuse" / "fused" / "fusing" / "fusion" share a feature; counts, turned into tf-idf by the
  model.
* ``diff``: identifiers and call tokens of the added (``+:``) and removed (``-:``) code of a
  unified diff (comments and string literals dropped with ``diff.py``'s masks), plus path
  parts of the changed files (``p:``: directories, extension, and ``p:aux`` for tests /
  benchmarks / docs); counts.
* ``chars``: character 4-grams of the lower-cased title (``c:``), whitespace collapsed; they
  tell non-optimisations apart where words are too rare to count (out of fold: ``unknown``
  recall 82-84 % -> 85-86 %, evaluation/RESULTS_intent.md).
* ``rules``: per strategy, the capped text score and code score of the hand rules
  (``r:t:<id>``, ``r:c:<id>``, divided by ``RULE_SCALE``), the largest of each over all
  strategies (``r:t:any``, ``r:c:any``), and the non-optimisation cues (``r:cue:title``,
  ``r:cue:body``); used as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from runner.intent import diff as _diff
from runner.intent.classifier import (
    AUXILIARY_PATH, CODE_CAP, MAX_DIFF_LINES, TEXT_CAP, Evidence, evidence)

#: Rule scores are divided by this so that a typical strong signal is about 1.
RULE_SCALE = 4.0
_WORD = re.compile(r"[a-z][a-z0-9_+]*[a-z0-9+]|[a-z]")
_CODE_TOKEN = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(?:\(|<)?")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ized", "ised", "izes", "ises", "ize", "ise",
             "ies", "ied", "es", "ed", "er", "s")
_STOP = frozenset("a an the of to in on for and or with by is are be as at from this that it its into we our "
                  "pr will can when which was were has have not no but if than then so also".split())


def stem(word: str) -> str:
    """``word`` without one common English suffix when at least four letters remain."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    """Stemmed lower-case words of ``text`` without stop words (markdown and code marks dropped)."""
    out = []
    for token in _WORD.findall((text or "").lower().replace("`", " ")):
        if token in _STOP or len(token) > 40:
            continue
        out.append(stem(token))
    return out


def _ngrams(prefix: str, tokens: list[str]) -> Counter:
    feats: Counter = Counter(f"{prefix}:{t}" for t in tokens)
    feats.update(f"{prefix}2:{a} {b}" for a, b in zip(tokens, tokens[1:]))
    return feats


def text_features(title: str = "", body: str = "", labels: Iterable[str] = (),
                  commit_messages: Iterable[str] = ()) -> Counter:
    """Word unigram and bigram counts of the title (``t:``) and of the rest (``b:``)."""
    feats = _ngrams("t", words(title))
    rest = "\n".join([body or "", " ".join(labels), *commit_messages])
    feats.update(_ngrams("b", words(rest)))
    return feats


def char_features(title: str, n: int = 4) -> Counter:
    """Counts of the character ``n``-grams (``c:``) of the lower-cased title, whitespace collapsed;
    n-grams of blanks only are dropped."""
    text = " ".join((title or "").lower().split())
    return Counter(f"c:{text[i:i + n]}" for i in range(len(text) - n + 1) if text[i:i + n].strip())


def diff_features(diff: str) -> Counter:
    """Code-token counts of the added / removed code and path parts of the changed files."""
    feats: Counter = Counter()
    if not diff:
        return feats
    lines, paths = _diff.parse(diff)
    for line in lines[:MAX_DIFF_LINES]:
        code = "".join(ch if m == "c" else " " for ch, m in zip(line.text, line.mask))
        for token in _CODE_TOKEN.findall(code):
            feats[f"{line.side}:{token}"] += 1
            # ``num_warps`` also counts as ``num`` and ``warps``; ``CamelCase`` as its parts.
            parts = [p for p in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", token.strip(".(<")) if len(p) > 2]
            if len(parts) > 1:
                feats.update(f"{line.side}:{p.lower()}" for p in parts)
    for path in paths:
        parts = path.split("/")
        feats.update(f"p:{p.lower()}" for p in parts[:-1])
        name = parts[-1]
        feats[f"p:.{name.rsplit('.', 1)[-1].lower()}" if "." in name else f"p:{name.lower()}"] += 1
        if AUXILIARY_PATH.search(path):
            feats["p:aux"] += 1
    return feats


def rule_features(ev: Evidence) -> dict[str, float]:
    """Capped rule scores per strategy (scaled by ``RULE_SCALE``, so in [0, ``TEXT_CAP`` /
    ``RULE_SCALE``] and [0, ``CODE_CAP`` / ``RULE_SCALE``]), the largest text and code score
    (``r:t:any``, ``r:c:any``; absent when no rule matched) and the non-optimisation cues (1.0)
    of a change's rule evidence ``ev`` (``classifier.evidence``)."""
    feats: dict[str, float] = {}
    for strategy, score in ev.channel_text.items():
        feats[f"r:t:{strategy}"] = min(score, TEXT_CAP) / RULE_SCALE
    for strategy, score in ev.channel_code.items():
        feats[f"r:c:{strategy}"] = min(score, CODE_CAP) / RULE_SCALE
    # The strongest text and code score of any strategy: "some mechanism is named / changed",
    # learned once for all strategies (a rare strategy's own score has too few rows to weigh).
    for channel in ("t", "c"):
        values = [v for k, v in feats.items() if k.startswith(f"r:{channel}:")]
        if values:
            feats[f"r:{channel}:any"] = max(values)
    for cue in ev.cues:
        feats["r:cue:" + ("body" if cue.startswith("body") else "title")] = 1.0
    return feats


def extract(title: str = "", body: str = "", labels: Iterable[str] = (), commit_messages: Iterable[str] = (),
            diff: str = "", ev: Evidence | None = None) -> dict[str, dict[str, float]]:
    """``{"text": counts, "diff": counts, "chars": counts, "rules": values}`` of one change (see the
    module docstring).

    ``diff`` is what the classifier reads of a change's diff: its excerpt (``diff.excerpt``), as
    in the training corpus. ``ev`` is the change's ``classifier.evidence`` when the caller already
    has it (it is computed here otherwise: the rules cost as much as the rest).
    """
    labels, commit_messages = list(labels), list(commit_messages)
    if ev is None:
        ev = evidence(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=diff)
    return {
        "text": dict(text_features(title, body, labels, commit_messages)),
        "diff": dict(diff_features(diff)),
        "chars": dict(char_features(title)),
        "rules": rule_features(ev),
    }
