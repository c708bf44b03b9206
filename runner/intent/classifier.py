"""The hand rules: evidence of the optimisation strategy a change intends, from its text and diff.

Pure functions over strings: the rules in ``rules.py`` are matched and their evidence summed
per strategy (``evidence``), in two separate channels:

* **text** (title, body, labels, commit messages): each text rule counts once, at its
  weight times the factor of the strongest source it matched in (title 1.5, the others
  1.0; a title's leading ``[tags]`` count as labels), plus 0.25 x weight for each further source that repeats it; the channel is capped
  at ``TEXT_CAP`` so a long description cannot outvote the code on volume alone.
* **code** (the diff): each match on a changed line counts ``side factor`` (the rule's
  ``added`` / ``removed``) x ``location factor`` (code 1.0, string literal 0.5, comment
  0.25, prose files such as README.md are all comment); the sum ``f`` of one rule's
  matches gives ``weight x 2 x (1 - 0.5**f)``: the first match counts its weight, repeats
  add less and less (at most twice the weight). Capped at ``CODE_CAP``. Lines of test,
  benchmark, example and documentation files (``AUXILIARY_PATH``) count ``AUXILIARY_FACTOR``
  (0.5): a ``torch.cuda.synchronize()`` removed from a benchmark script says less about the
  change's intent than one removed from the library.

Ties (equal totals) go to the strategy with more code evidence, then to the one with more
evidence in the title (the author's own one-line summary), then to the order of
STRATEGIES.md.

A change whose own words say it is not an optimisation (``non_optimisation_cues``: the title
adds tests / benchmarks / docs, fixes a bug without naming a performance problem, bumps a
dependency, reverts, renames, refactors or deletes; or the description says "test-only",
"kernels are untouched"; a ``[Perf]`` / ``perf:`` tag overrides the title cues) keeps only
``NON_OPTIMISATION_FACTOR`` (0.25) of its text evidence per strategy, at most
``NON_OPTIMISATION_TEXT_CAP`` (1.0, below ``MIN_SCORE``), and ``NON_OPTIMISATION_CODE_FACTOR``
(0.25) of its code evidence: the strategy words name the code being tested or repaired, and
on real pull requests a fix's code evidence is mostly incidental (evaluation/RESULTS_intent.md).

A strategy is named when its total reaches ``MIN_SCORE``; below that the answer is
``unknown``. ``classify_rules`` gives the rules' own ranking aid ``strength x (0.4 + 0.6 x
margin)`` with ``strength = 1 - exp(-score / 3)`` and ``margin = score / (score + best other
score)``. perfgate's ``classify`` (``model.py``) is the learned model: it reads these rule
scores as features beside the words and the diff tokens, and quotes the rules' signals.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from . import diff as _diff
from .rules import (CODE_RULES, FIX_PREFIX, NON_OPTIMISATION_BODY, NON_OPTIMISATION_PREFIX, NON_OPTIMISATION_TITLE,
                    PATH_RULES, PERF_TAG, PERF_WORDS, STRATEGIES, TEXT_RULES, TITLE_PREFIX, UNKNOWN)

MIN_SCORE = 1.5
TEXT_CAP = 8.0
CODE_CAP = 10.0
SOURCE_FACTOR = {"title": 1.5, "body": 1.0, "labels": 1.0, "commits": 1.0}
LOCATION_FACTOR = {"code": 1.0, "string": 0.5, "comment": 0.25}
#: Leading ``[tag]`` groups of a title.
TAG_PREFIX = re.compile(r"^\s*(?:\[[^\]]{1,60}\]\s*)+")
#: Changed files whose code says less about intent: tests, benchmarks, examples, docs.
AUXILIARY_PATH = re.compile(r"(?:^|/)(?:tests?|testing|benchmarks?|bench|examples?|docs?|tutorials?)/"
                            r"|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|conftest\.py|bench_[^/]*)$")
AUXILIARY_FACTOR = 0.5
#: Share of the text evidence kept, and its cap per strategy, when the text says the change is
#: not an optimisation (rules v3). The cap is below MIN_SCORE so that only code evidence can
#: then name a strategy; the factor keeps the text's ranking of the candidates.
NON_OPTIMISATION_FACTOR = 0.25
NON_OPTIMISATION_TEXT_CAP = 1.0
NON_OPTIMISATION_CODE_FACTOR = 0.25
MAX_SIGNALS = 8
MAX_CANDIDATES = 5
#: A diff longer than this many changed lines is read only up to it (a vendored library or a
#: generated file would otherwise dominate both the time and the evidence).
MAX_DIFF_LINES = 20000


@dataclass(frozen=True)
class CodeMatch:
    """One code rule's strongest match: the changed line it is on (``side`` ``+``/``-``, ``path``,
    ``line`` as in the diff), the matched ``token``, where it stands (``code`` / ``string`` /
    ``comment``), the rule's ``weight`` and the line's ``factor`` (side x location x path)."""

    side: str
    path: str
    line: str
    token: str
    where: str
    weight: float
    factor: float


@dataclass(frozen=True)
class TextMatch:
    """One text rule's match: the ``source`` it counted in most (title, body, labels, commits),
    the matched ``phrase`` and the rule's ``weight``."""

    source: str
    phrase: str
    weight: float


@dataclass(frozen=True)
class Evidence:
    """The summed rule evidence of one change (``evidence()``), before any confidence is given.

    ``scores``: strategy -> total (text + code, each capped) for strategies with any evidence;
    ``code_lines`` / ``text_matches``: strategy -> the matches behind its code / text signals
    (``CodeMatch`` / ``TextMatch``), what a reader can check;
    ``code`` / ``title``: strategy -> the code-channel / title-only part; ``signals``:
    strategy -> signal strings; ``cues``: non-optimisation cues; ``ranked``: strategies best
    first (ties as in the module docstring); ``channel_text`` / ``channel_code``: strategy ->
    each channel's score as matched, before caps and before the cues scale it (what the
    learned model reads, ``features.rule_features``).
    """

    scores: dict
    code: dict
    title: dict
    signals: dict
    cues: list
    ranked: list
    channel_text: dict
    channel_code: dict
    code_lines: dict = None     # strategy -> [CodeMatch], strongest first (``code_evidence``)
    text_matches: dict = None   # strategy -> [TextMatch], strongest first (``text_evidence``)

    def named(self) -> str:
        """The strategy id the rules name, or ``unknown`` when no total reaches ``MIN_SCORE``."""
        return self.ranked[0] if self.ranked and self.scores[self.ranked[0]] >= MIN_SCORE else UNKNOWN

    def best_other(self, strategy: str) -> float:
        """The highest total of any other strategy (0.0 when there is none)."""
        return _best_other(self.scores, strategy)


def evidence(title: str = "", body: str = "", labels: Iterable[str] = (),
             commit_messages: Iterable[str] = (), diff: str = "") -> Evidence:
    """Rule evidence of a change: text and code channels, non-optimisation cues, ranking.

    Arguments as ``classify``. Pure.
    """
    commit_messages = [str(m) for m in commit_messages]
    in_title = text_evidence(title=title) if title else {}
    cues = non_optimisation_cues(title=title, body=body, commit_messages=commit_messages)
    matches: dict[str, list] = {}
    text = text_evidence(title=title, body=body, labels=labels, commit_messages=commit_messages, matches=matches)
    lines: dict[str, list] = {}
    code = code_evidence(diff, matches=lines)
    channel_text = {s: score for s, (score, _) in text.items()}
    channel_code = {s: score for s, (score, _) in code.items()}
    if cues:
        text = {s: (min(score * NON_OPTIMISATION_FACTOR, NON_OPTIMISATION_TEXT_CAP), sig)
                for s, (score, sig) in text.items()}
        in_title = {s: (min(score * NON_OPTIMISATION_FACTOR, NON_OPTIMISATION_TEXT_CAP), sig)
                    for s, (score, sig) in in_title.items()}
        code = {s: (score * NON_OPTIMISATION_CODE_FACTOR, sig) for s, (score, sig) in code.items()}
    scores: dict[str, float] = {}
    signals: dict[str, list[str]] = {}
    for strategy in STRATEGIES:
        t_score, t_signals = text.get(strategy, (0.0, []))
        c_score, c_signals = code.get(strategy, (0.0, []))
        total = min(t_score, TEXT_CAP) + min(c_score, CODE_CAP)
        if total > 0:
            scores[strategy] = total
            # Code first: "what the diff does" is the stronger statement.
            signals[strategy] = (c_signals + t_signals)[:MAX_SIGNALS - len(cues[:1])] + [
                f"not an optimisation? {c}" for c in cues[:1]]
    # Ties: more code evidence, then more title evidence, then the order of STRATEGIES.md.
    order = list(STRATEGIES)
    code_part = {s: min(v[0], CODE_CAP) for s, v in code.items()}
    title_part = {s: v[0] for s, v in in_title.items()}
    ranked = sorted(scores, key=lambda s: (-round(scores[s], 9), -round(code_part.get(s, 0.0), 9),
                                           -round(title_part.get(s, 0.0), 9), order.index(s)))
    return Evidence(scores, code_part, title_part, signals, cues, ranked, channel_text, channel_code,
                    {k: sorted(v, key=lambda m: -m.weight * m.factor) for k, v in lines.items()},
                    {k: sorted(v, key=lambda m: -m.weight) for k, v in matches.items()})


def _result(ev: Evidence, confidence: Callable[[Evidence, str], float]) -> dict:
    """The ``classify`` dict of evidence ``ev``, each candidate's confidence from ``confidence``."""
    candidates = [{"strategy": s, "confidence": round(confidence(ev, s), 3), "signals": ev.signals[s]}
                  for s in ev.ranked[:MAX_CANDIDATES]]
    if ev.named() == UNKNOWN:
        return {"strategy": UNKNOWN, "confidence": 0.0, "signals": [], "candidates": candidates}
    best = candidates[0]
    return {"strategy": best["strategy"], "confidence": best["confidence"], "signals": list(best["signals"]),
            "candidates": candidates}


def classify_rules(title: str = "", body: str = "", labels: Iterable[str] = (),
                   commit_messages: Iterable[str] = (), diff: str = "") -> dict:
    """The strategy a change most likely intends, from the hand rules alone, with the rules'
    own confidence ``strength x (0.4 + 0.6 x margin)`` (a ranking aid, not a probability).

    Arguments and result as ``model.classify`` (without ``optimisation``): ``strategy`` is a
    strategy id or ``"unknown"`` (no total reaches ``MIN_SCORE``; ``confidence`` 0.0, no
    ``signals``), ``candidates`` up to 5 strategies with any evidence, best first.
    """
    ev = evidence(title=title, body=body, labels=labels, commit_messages=commit_messages, diff=diff)
    return _result(ev, lambda e, s: _confidence(e.scores[s], e.best_other(s)))


def non_optimisation_cues(title: str = "", body: str = "", commit_messages: Iterable[str] = ()) -> list[str]:
    """Cues that a change is not itself an optimisation (tests, benchmark, docs, bug fix, bump...).

    Args:
        title: the PR title; its leading ``[tags]`` and ``area:`` prefix are skipped before the
            intent verb is read (``rules.TITLE_PREFIX``).
        body: the PR description.
        commit_messages: full commit messages; without a title, the cue must hold for the
            subject line of *every* commit (one optimisation commit makes the change one).

    Returns:
        Signals such as ``'title: "add unit tests"'`` (empty list: no cue). Pure.
    """
    out = []
    subjects = [title] if (title or "").strip() else [m.strip().splitlines()[0] for m in commit_messages if m.strip()]
    hits = [_title_cue(s.lower()) for s in subjects]
    if hits and all(hits):
        out.append(f'{"title" if (title or "").strip() else "commits"}: "{_clip(hits[0])}"')
    low = (body or "").lower()
    for pattern in NON_OPTIMISATION_BODY:
        match = pattern.search(low)
        if match:
            out.append(f'body: "{_clip(match.group(0))}"')
            break
    return out


def _title_cue(subject: str) -> str | None:
    """The matched non-optimisation cue of one lower-cased title or commit subject, or None."""
    if PERF_TAG.search(subject):
        return None
    prefix = NON_OPTIMISATION_PREFIX.search(subject)
    if prefix:
        return prefix.group(0)
    fix = FIX_PREFIX.search(subject)
    if fix and not PERF_WORDS.search(subject):
        return fix.group(0)
    rest = subject[TITLE_PREFIX.match(subject).end():]
    for pattern in NON_OPTIMISATION_TITLE:
        match = pattern.search(rest)
        if match:
            return match.group(0)
    return None


def _best_other(scores: dict[str, float], strategy: str) -> float:
    return max((v for k, v in scores.items() if k != strategy), default=0.0)


def _confidence(score: float, other: float) -> float:
    strength = 1.0 - math.exp(-score / 3.0)
    margin = score / (score + other) if score > 0 else 0.0
    return max(0.0, min(1.0, strength * (0.4 + 0.6 * margin)))


def text_evidence(title: str = "", body: str = "", labels: Iterable[str] = (),
                  commit_messages: Iterable[str] = (), matches: dict | None = None) -> dict[str, tuple[float, list[str]]]:
    """Text channel: strategy -> (score, signals) from title, body, labels and commit messages.

    ``matches``, when given, is filled with strategy -> [``TextMatch``] (each rule's match).
    """
    # v4: leading [tags] name the area ("[mxfp8 moe training]", "[CUDA]"), not the change: they
    # count as labels, not as title words.
    match = TAG_PREFIX.match(title or "")
    if match:
        tags = match.group(0)
        labels, title = [*labels, tags], (title or "")[len(tags):]
    sources = {
        "title": (title or "").lower(),
        "body": (body or "").lower(),
        "labels": " ; ".join(str(label) for label in labels).lower(),
        "commits": "\n\n".join(str(m) for m in commit_messages).lower(),
    }
    # A commit message that repeats the title is not a second witness.
    if sources["title"] and sources["commits"].strip().startswith(sources["title"].strip()):
        sources["commits"] = sources["commits"].strip()[len(sources["title"].strip()):]
    out: dict[str, tuple[float, list[str]]] = {}
    for rule in TEXT_RULES:
        hits = []
        for source, text in sources.items():
            if not text:
                continue
            match = rule.pattern.search(text)
            if match:
                hits.append((SOURCE_FACTOR[source], source, match.group(0)))
        if not hits:
            continue
        hits.sort(key=lambda h: -h[0])
        score = rule.weight * (hits[0][0] + 0.25 * (len(hits) - 1))
        prev_score, prev_signals = out.get(rule.strategy, (0.0, []))
        signal = f'{hits[0][1]}: "{_clip(hits[0][2])}"'
        out[rule.strategy] = (prev_score + score, prev_signals + [signal])
        if matches is not None:
            matches.setdefault(rule.strategy, []).append(TextMatch(hits[0][1], " ".join(hits[0][2].split()), rule.weight))
    return out


def code_rule_matches(lines, rules, side: str | None = None) -> Iterable[tuple]:
    """Every match of the code rules on diff lines: ``(line, rule index, match, location)``.

    The one scan :func:`code_evidence` and :func:`runner.intent.precise.fired_rules` share.

    Args:
        lines: :class:`runner.intent.diff` lines, in diff order (at most :data:`MAX_DIFF_LINES`
            are read).
        rules: ``(index, CodeRule)`` pairs to try, in the order tried on each line; a rule whose
            ``triggers`` name no word of the line (lower-cased) is skipped there.
        side: only lines of this side (``"+"``, ``"-"`` or ``" "``) of the first
            :data:`MAX_DIFF_LINES`; None reads every side.

    Yields:
        In line order, then rule order, then match order: the line, the rule's index, the
        ``re.Match`` and where it lies (``code``, ``comment`` or ``string``).
    """
    rules = list(rules)
    for line in lines[:MAX_DIFF_LINES]:
        if side is not None and line.side != side:
            continue
        low = line.text.lower()
        for index, rule in rules:
            if rule.triggers is not None and not any(t in low for t in rule.triggers):
                continue
            for match in rule.pattern.finditer(line.text):
                yield line, index, match, _diff.location(line.mask, match.start(), match.end())


def code_evidence(diff: str, matches: dict | None = None) -> dict[str, tuple[float, list[str]]]:
    """Code channel: strategy -> (score, signals) from a unified diff (see the module docstring).

    ``matches``, when given, is filled with strategy -> [``CodeMatch``] (each rule's strongest line).
    """
    if not diff:
        return {}
    lines, paths = _diff.parse(diff)
    found: dict[int, list] = {}       # rule index -> [sum of factors, best (factor, signal), its CodeMatch]
    last = None
    for line, index, match, where in code_rule_matches(lines, enumerate(CODE_RULES)):
        if last == (id(line), index):
            continue      # one match per rule and line is enough
        last = (id(line), index)
        rule = CODE_RULES[index]
        side_factor = rule.added if line.side == "+" else rule.removed
        factor = side_factor * LOCATION_FACTOR[where] * _path_factor(line.path)
        entry = found.setdefault(index, [0.0, (0.0, ""), None])
        entry[0] += factor
        if factor > entry[1][0]:
            kind = "code" if where == "code" else where
            at = f" {line.path}" if line.path else ""
            entry[1] = (factor, f'{line.side}{kind}{at}: "{_clip(match.group(0))}"')
            entry[2] = CodeMatch(line.side, line.path, line.text, match.group(0), where,
                                 rule.weight, factor)
    out: dict[str, tuple[float, list[str]]] = {}
    for index, (total, (_, signal), best) in sorted(found.items(), key=lambda kv: -kv[1][0]):
        rule = CODE_RULES[index]
        score = rule.weight * 2.0 * (1.0 - 0.5 ** total)
        prev_score, prev_signals = out.get(rule.strategy, (0.0, []))
        out[rule.strategy] = (prev_score + score, prev_signals + [signal])
        if matches is not None:
            matches.setdefault(rule.strategy, []).append(best)
    for path in paths:
        for pattern, strategy, weight in PATH_RULES:
            if pattern.search(path):
                prev_score, prev_signals = out.get(strategy, (0.0, []))
                if not any(s.startswith("file ") for s in prev_signals):
                    out[strategy] = (prev_score + weight, prev_signals + [f"file {path}"])
    return out


def _path_factor(path: str) -> float:
    """``AUXILIARY_FACTOR`` for a test / benchmark / example / docs file, else 1.0."""
    return AUXILIARY_FACTOR if path and AUXILIARY_PATH.search(path) else 1.0


def _clip(text: str, width: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
