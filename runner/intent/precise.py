"""The strategy a change intends, named only where a hand rule has earned it on real pull requests.

The report names one strategy of ../shared/STRATEGIES.md only when a rule that fired on it is
right on at least :data:`MIN_PRECISION` of the real merged pull requests it fires on
(evaluation/intent_real.jsonl, 3,945 PRs labelled by hand), with at least :data:`MIN_FIRED`
of them; otherwise it says nothing about strategy (issue 50: a maintainer cannot act on a
guess). The rules are the hand rules of :mod:`.rules`; which of them qualify, and how often
each was right, is measured by ``evaluation/intent_precision.py`` and stored in
``precise.json`` beside this module (data, re-measured whenever the rules or the corpus
change; ``tests/intent/test_precise.py`` recounts it).

What "fires" means is :func:`fired_rules`, the one definition the measurement and the run
share: a text rule matches the lower-cased title, body, labels or commit messages; a code rule
matches code (not a comment, not a string) on an added line of the diff.

Measured (evaluation/RESULTS_intent.md, "The default path"): of the 284 rules that fire on the
2,334 training PRs, two reach 90 % with 8 or more firings; over all 3,945 PRs, the rules whose
own firings reach both thresholds are those in ``precise.json``. The learned classifier that
guessed a strategy for every change (right first on 43-48 % of unseen repositories' PRs) is
evaluation-only (``evaluation/intent_model/``).

Pure: no I/O but reading ``precise.json`` once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from . import diff as _diff
from .classifier import code_rule_matches
from .rules import CODE_RULES, STRATEGIES, TEXT_RULES, UNKNOWN

PRECISE_PATH = Path(__file__).with_name("precise.json")
#: A rule names a strategy only when it was right on this share of its firings ...
MIN_PRECISION = 0.9
#: ... over at least this many real pull requests.
MIN_FIRED = 10
#: Evidence quotes kept, each cut to this many characters.
MAX_QUOTES = 3
QUOTE_WIDTH = 80


def rule_key(kind: str, index: int) -> str:
    """A rule's stable name: ``"text:<pattern>"`` or ``"code:<pattern>"`` (the index in
    ``TEXT_RULES`` / ``CODE_RULES`` moves when rules are added; the pattern does not)."""
    rules = TEXT_RULES if kind == "text" else CODE_RULES
    return f"{kind}:{rules[index].pattern.pattern}"


def fired_rules(title: str = "", body: str = "", labels: Iterable[str] = (),
                commit_messages: Iterable[str] = (), diff: str = "",
                only: frozenset[str] | None = None) -> dict[str, str]:
    """Which hand rules fire on a change, each with the text it matched.

    Args:
        title, body, labels, commit_messages: the PR's prose (any may be empty).
        diff: a unified diff (``git diff base head``); only added lines count, code only.
        only: rule keys (:func:`rule_key`) to try; None tries every rule.

    Returns:
        ``{rule key: matched text}``, in the order of ``TEXT_RULES`` then ``CODE_RULES``.
    """
    prose = [str(p).lower() for p in (title, body, " ; ".join(map(str, labels)),
                                      "\n\n".join(map(str, commit_messages))) if p]
    out: dict[str, str] = {}
    for index, rule in enumerate(TEXT_RULES):
        key = rule_key("text", index)
        if only is not None and key not in only:
            continue
        for text in prose:
            match = rule.pattern.search(text)
            if match:
                out[key] = " ".join(match.group(0).split())
                break
    codes = [(i, r) for i, r in enumerate(CODE_RULES)
             if only is None or rule_key("code", i) in only]
    if not (diff and codes):
        return out
    lines, _ = _diff.parse(diff)
    for line, index, _match, where in code_rule_matches(lines, codes, side="+"):
        key = rule_key("code", index)
        if where == "code" and key not in out:
            out[key] = f"{line.path}: {line.text.strip()}"
    return out


@lru_cache(maxsize=1)
def precise_rules(path: Path = PRECISE_PATH) -> dict[str, dict]:
    """The measured rules of ``precise.json``: ``{rule key: {"strategy", "fired", "right"}}``.

    Raises:
        ValueError: the file names a rule that :mod:`.rules` no longer has, or a rule below the
            thresholds (re-run evaluation/intent_precision.py).
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    known = {rule_key("text", i) for i in range(len(TEXT_RULES))}
    known |= {rule_key("code", i) for i in range(len(CODE_RULES))}
    rules = {}
    for row in data["rules"]:
        if row["rule"] not in known:
            raise ValueError(f"{path.name}: rule {row['rule'][:60]!r} is not in rules.py; re-run "
                             "evaluation/intent_precision.py")
        if row["fired"] < MIN_FIRED or row["right"] < MIN_PRECISION * row["fired"]:
            raise ValueError(f"{path.name}: rule {row['rule'][:60]!r} is below the thresholds")
        rules[row["rule"]] = {k: row[k] for k in ("strategy", "fired", "right")}
    return rules


def name_strategy(title: str = "", body: str = "", labels: Iterable[str] = (),
                  commit_messages: Iterable[str] = (), diff: str = "") -> dict:
    """The ``intent`` of results.json: a strategy only where a measured rule backs it.

    Returns:
        ``{"strategy", "confidence", "signals", "precision"}``: ``strategy`` a STRATEGIES.md id
        when the measured rules that fire all name it, else ``"unknown"``; ``confidence`` the
        backing rule's measured precision (right / fired; the best of them), 0.0 when unknown;
        ``signals`` the matched texts (``'rule matched "..."'``, at most ``MAX_QUOTES``);
        ``precision`` ``{"right", "fired"}`` of that rule on the real pull requests, or None.
        Two measured rules naming different strategies name none.
    """
    measured = precise_rules()
    hits = fired_rules(title, body, labels, commit_messages, diff, only=frozenset(measured))
    strategies = {measured[key]["strategy"] for key in hits}
    if len(strategies) != 1 or next(iter(strategies)) not in STRATEGIES:
        return {"strategy": UNKNOWN, "confidence": 0.0, "signals": [], "precision": None}
    best = max(hits, key=lambda k: (measured[k]["right"] / measured[k]["fired"],
                                    measured[k]["fired"]))
    rule = measured[best]
    quotes = list(dict.fromkeys(text[:QUOTE_WIDTH] for text in hits.values()))  # once each
    signals = [f'matched "{text}"' for text in quotes[:MAX_QUOTES]]
    return {"strategy": rule["strategy"], "confidence": round(rule["right"] / rule["fired"], 3),
            "signals": signals, "precision": {"right": rule["right"], "fired": rule["fired"]}}
