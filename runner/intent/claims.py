"""The quantitative performance claims of a change: what its PR title, body and commit messages
say it does to time, throughput, latency, memory or compile time, and by how much.

``parse_claims(title, body, commits) -> list[dict]``, each claim::

    {quote, metric, direction, ratio | ratio_low + ratio_high, bound, scope, vs, source}

* ``metric``: one of ``claim_words.METRICS``; ``direction``: ``faster``/``slower`` (time-like
  metrics and throughput), ``less``/``more`` (memory, other).
* ``ratio``: head/base in the metric's own sense: "2x faster" → time 0.5, "2x throughput" →
  2.0, "6.4x memory reduction" → 0.156. Where the text admits two readings or gives a range,
  ``ratio_low``/``ratio_high`` cover them: "30 % faster" → time 0.7 … 1/1.3 (fewer seconds, or
  more runs per second), "100-200x faster" → 0.005 … 0.01. ``ratio`` is None then; it is None
  with no range either for an amount without a base ("saves 46 GB").
* ``bound``: ``up_to``, ``at_least`` or None; ``scope``: ``claim_words.scope_of`` of the
  sentence (device, dtype, shape, batch, model; ``case`` for a table row); ``vs``: ``base`` or
  the other implementation named ("2x faster than xformers" → ``xformers``: not testable
  against base), ``the option off`` for the figures of a text about an opt-in option ("Adds
  opt-in activation checkpointing ... 3.3x less peak memory"); ``source``: ``title``, ``body``
  or ``commit``.

Deterministic rules over sentences (:mod:`.claim_words` the vocabulary, :mod:`.claim_pairs`
before/after pairs and tables); code blocks, links and quoted replies are not read. Numbers
that are no claims (issue numbers, versions, shapes, tolerances, accuracy, dates) have no claim
word beside them. Figures: evaluation/RESULTS_claims.md.
"""

from __future__ import annotations

import re
from typing import Iterable

from .claim_pairs import block_pairs, pair_claims, table_blocks, table_claims
from .claim_words import (BASE_WORDS, FASTER, LESS, MORE, NOT_PERF, NUMBER, REPAIR, SLOWER,
                          TIME_LIKE, UNIT, VERB_FASTER, VERB_LESS, VERB_MORE, VERSUS,
                          direction_of, metric_of, number_of, scope_of, unit_metric)

_RANGE = (r"(?P<n>" + NUMBER + r")(?:\s*[x×%]?\s*(?:-|–|~|to)\s*\+?(?P<n2>" + NUMBER + r"))?")
_MULT = re.compile(r"(?<![\w.])" + _RANGE + r"\s*(?:[x×X](?![\w\d])|times\b|-?fold\b)"
                   r"|(?<![\w.])[x×](?P<p>" + NUMBER + r")(?=\s)")
_PCT = re.compile(r"(?<![\w.])(?P<sign>[+-])?" + _RANGE + r"\s*(?:%|percent\b)")
#: Characters read each side of a figure, and of a text (GitHub caps a PR body at 65,536).
_WINDOW = 300
MAX_TEXT = 65_536
#: Figures read in one text at most (a log pasted as prose has thousands; a description a few).
MAX_FIGURES = 2_000
_AMOUNT = re.compile(r"(?<![\w.])(?P<n>" + NUMBER + r")\s*" + UNIT)
_BARE = re.compile(r"(?<![\w.])(?P<n>\d+\.\d+)\s+(?=faster|slower)")
_QUAL = r"(?:~|≈|about|approx\.?|approximately|roughly|around|almost|nearly|up to|at least|" \
        r"over|" \
        r"more than|>=?|≥|\+|an? |additional|another|of|by|:)\s*"
_BY_END = re.compile(r"(?:by|of|:|is|to|at|with|were|was|gives?|giving|yields?)\s*(?:" + _QUAL
                     + r")*$", re.IGNORECASE)
def _clean(text: str) -> str:
    """``text`` without code blocks, HTML comments, images, link targets, URLs, quoted replies and
    inline-code backticks."""
    text = re.sub(r"```.*?(?:```|$)", "\n", text, flags=re.DOTALL)
    text = re.sub(r"<!--.*?(?:-->|$)", " ", text, flags=re.DOTALL)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"https?://\S+", " ", text)
    text = re.sub(r"^\s*>.*$", "", text, flags=re.MULTILINE)
    text = re.sub(r"</?\w+[^>]*>", " ", text)
    text = re.sub(r"\bbetween\s+(" + NUMBER + r")\s*([%x×]?)\s+and\s+(" + NUMBER + r")\s*([%x×])",
                  r"\1\2-\3\4", text)  # "improved between 2.5 and 7%"
    text = re.sub(r"\s*\$\s*\\times\s*\$", "x", text)  # "5 $\\times$ speed up"
    text = text.replace(":arrow_down:", "↓").replace(":arrow_up:", "↑")
    text = re.sub(r"⬇️?|🔽", "↓", re.sub(r"⬆️?|🔼", "↑", text))
    return text.replace("`", "").replace("**", "").replace("\u00a0", " ")


_TABLE_ROW = re.compile(r"^[^|]*\|[^|]*\|")  # a row of a table without leading pipes


def _sentences(text: str) -> list[str]:
    """Lines split at sentence ends (``. `` before a capital, ``;``); table lines left out."""
    out = []
    for line in text.splitlines():
        if line.strip().startswith("|") or _TABLE_ROW.match(line):
            continue
        for part in re.split(r"(?<=[.!?;])\s+(?=[A-Z(\[*-])|;\s*", line):
            if part.strip():
                out.append(part.strip())
    return out


def _ratio_fields(metric: str, better: bool, low: float, high: float, kind: str,
                  certain: bool) -> dict | None:
    """``ratio`` or ``ratio_low``/``ratio_high`` for a multiplier (kind ``x``) or a percentage
    (``%``) of ``low``…``high``; None for a figure that cannot be a ratio (a 150 % reduction)."""
    shrink = (metric in TIME_LIKE or metric not in ("throughput",)) == better
    if kind == "x":
        values = [1 / low, 1 / high] if shrink else [low, high]
    elif shrink:
        if certain:
            values = [1 - low / 100, 1 - high / 100]
        else:
            values = [1 - low / 100, 1 - high / 100, 1 / (1 + low / 100), 1 / (1 + high / 100)]
    else:
        values = [1 + low / 100, 1 + high / 100]
        if not certain:
            values += [1 / (1 - v / 100) for v in (low, high) if v < 100]
    values = [v for v in values if v > 0]
    if not values or high <= 0 or low < 0:
        return None
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-9:
        return {"ratio": round(lo, 4)}
    return {"ratio": None, "ratio_low": round(lo, 4), "ratio_high": round(hi, 4)}


def _bound(left: str, right: str) -> str | None:
    tail = left[-14:].lower()
    if re.search(r"up to\s*~?\s*$", tail):
        return "up_to"
    if re.search(r"(?:at least|more than|over|>=?|≥)\s*~?\s*$", tail) or right.startswith("+"):
        return "at_least"
    return None


def _versus(right: str) -> str:
    match = re.match(r"[^.;()]{0,40}?\b" + VERSUS, right, re.IGNORECASE)
    if not match:
        return "base"
    name = re.split(r"\s(?:on|for|in|at|with|when|and|by|across|using|of)\b", match.group("vs"))[0]
    name = name.strip("`'\" ")
    if re.match(BASE_WORDS, name, re.IGNORECASE) or re.match(r"\d", name):
        return "base"
    return name


_FIGURE = re.compile(r"\d\s*(?:[x×%]|times\b)")
_VERB = re.compile(r"\b(?:" + VERB_FASTER + "|" + VERB_LESS + "|" + VERB_MORE + ")", re.IGNORECASE)


def _clause(left: str) -> str:
    """The words before a figure that can say what it measures: its clause, or the clause
    before it when its own is only a label or empty ("Speed up fwd 15%, bwd 30%") and that
    clause's verb comes before its own figure ("4x workspace shrink, ~2x kernel": no)."""
    parts = re.split(r"[,;:(\[\]]|\band\b|\bwhile\b|\bbut\b|\bwhich\b",
                     re.sub(r"\([^()]*\)", " ", left))
    clause = parts[-1]
    if re.search(r"\b(?:another|additional|further)\s*$", clause):
        return left  # "a speedup of 21% and ... of another 3%"
    own = re.sub(_QUAL, "", clause).strip(" ~*-")
    if len(parts) > 1 and len(own.split()) <= 2 and not re.search(r"\d", own) and not \
            re.search(r"\b(?:" + "|".join((FASTER, SLOWER, LESS, MORE)) + r")\b", own, re.I):
        previous = parts[-2]
        figure = _FIGURE.search(previous)
        if figure is None or _VERB.search(previous[:figure.start()]) or re.search(
                r"\b(?:speed[- ]?up|improvement|gain)\b", previous[:figure.start()], re.I):
            return previous + " " + clause  # "a performance gain, roughly 0.5%"
    return clause


def _direction_word(clause: str, after: str, right: str, kind: str,
                    decimal: bool) -> tuple[str | None, re.Match | None]:
    """Which way a figure goes, from the words around it (a part of :func:`_sense`).

    Returns:
        ``(word, cost)``: word is ``slower``, ``less``, ``more``, ``faster`` or None (no
        direction: no claim); cost is the "at the cost of ..." match the clause ends with, if any.
    """
    word = None
    for name, pattern in (("slower", SLOWER), ("less", LESS), ("more", MORE), ("faster", FASTER)):
        hit = re.search(r"\b" + pattern + r"\b", after, re.IGNORECASE)
        if hit and (word is None or hit.start() < word[1]):
            word = (name, hit.start())
    noun_end = re.search(r"\b(?:speed[- ]?ups?|improvements?|gains?|reductions?|savings?|"
                         r"slow[- ]?downs?)\s*(?:of\s*)?[:=]?\s*(?:" + _QUAL + r")*$",
                         clause, re.IGNORECASE)
    if word is None and noun_end:
        text = noun_end.group(0).lower()
        word = ("slower" if "slow" in text else "less" if re.match(r"reduc|sav", text)
                else "faster", 0)
    verb_end = re.search(r"\b(?:" + VERB_LESS + "|" + VERB_MORE + r")\s*(?:by\s*)?(?:~|about|"
                         r"nearly|almost)?\s*$", clause, re.IGNORECASE)
    cost = re.search(r"\b(?:at the cost of|(?:performance )?cost of|overhead of|penalty of|"
                     r"(?:extra|additional) [\w-]+(?: [\w-]+)? of)\s*(?:" + _QUAL + r")*$",
                     clause, re.IGNORECASE)
    if word is None and cost:
        word = ("slower" if metric_of(after + " " + cost.group(0)) in (None, "time", "latency",
                                                                       "compile_time")
                else "more", 0)  # "at the cost of 1.29x training-step time"
    arrow = re.search(r"[↓↑]", clause)
    if word is None and arrow:
        word = ("less" if arrow.group(0) == "↓" else "more", 0)
    ends = not after or re.match(r"(?:with|on|for|in|at|across|when|using|via)\b", after)
    if word is None and (_BY_END.search(clause[-40:]) or ends or verb_end):
        for name, pattern in (("slower", SLOWER), ("less", VERB_LESS), ("more", VERB_MORE),
                              ("faster", VERB_FASTER), ("less", LESS), ("faster", FASTER)):
            if re.search(r"\b" + pattern, clause[-70:], re.IGNORECASE):
                word = (name, 0)
                break
    if word is None and kind == "x" and re.match(r"\s*(?:over|vs\.?|than|compared)\b", right):
        word = ("faster", 0)  # "3.2-4.5x over the generic kernel"
    if word is None and kind == "x" and decimal and re.match(r"\s*(?:on|at|for|across)\b", right):
        word = ("faster", 0)  # "(1.2-1.9x on B200/GB300)", "Isolated 1.3-2.55x at M>=1024"
    return (word[0] if word else None), cost


def _sense(left: str, right: str, kind: str,
           decimal: bool = False) -> tuple[str, bool, bool] | None:
    """``(metric, better, certain)`` of a figure from the words around it; None: no claim.

    ``certain``: the words fix the reading of a percentage ("30 % less time" is 0.7; "30 %
    faster" is 0.7 or 1/1.3)."""
    after = " ".join(re.findall(r"[\w/-]+", re.split(r"[,;:(]|\.\s", right)[0])[:3])
    after = re.sub(r"^times\b\s*", "", after)  # "2-3x times"
    clause = _clause(left)
    near = clause[-60:] + " " + after
    close = clause[-25:] + " " + " ".join(after.split()[:2])
    share = re.match(r"\s*of (?:the )?(?:[\w-]+ ){0,2}(?:memory|time|runtime)\b", right)
    if share and re.search(r"\b" + VERB_LESS, clause, re.IGNORECASE):
        return metric_of(share.group(0)) or "time", True, True  # "save 20% of total memory"
    if re.search(r"\b(?:last|previous|old|original)\s+(?:version|code|implementation)\s+"
                 r"(?:\w+\s+){0,2}(?:was|were)\b", clause, re.IGNORECASE):
        return None  # "the last version really was around 50% worse": not this change
    if re.search(NOT_PERF, close, re.IGNORECASE) or re.match(r"\s*(?:of|per)\b", right):
        return None
    name, cost = _direction_word(clause, after, right, kind, decimal)
    if name is None:
        return None
    metric = metric_of(after) or metric_of(clause[-35:])
    if metric is None and re.search(r"\b(?:time|overhead|duration|runtime|wall|step|"
                                    r"iteration)\b", near, re.IGNORECASE):
        metric = "time"
    metric = metric or metric_of(clause[-70:])
    if name in ("faster", "slower") and metric in ("memory", "other") and \
            re.search(r"\b" + (FASTER if name == "faster" else SLOWER), after, re.IGNORECASE) and \
            not metric_of(after):
        metric = "time"  # "memory access optimization (~1.9x faster)"
    if metric is None:
        metric = "time" if name in ("faster", "slower") else "other"
    repaired = name == "slower" and re.search(r"\b" + REPAIR, clause, re.IGNORECASE)
    better = {"faster": True, "less": True, "slower": False, "more": False}[name]
    if metric == "throughput" and name in ("less", "more"):
        better = name == "more"
    if repaired:
        better = True
    certain = name in ("less", "more") or metric not in TIME_LIKE or bool(repaired) or bool(
        cost and re.search(r"\btime\b", cost.group(0) + " " + after))
    if kind == "%" and name == "faster" and metric in TIME_LIKE:
        certain = bool(re.search(r"\b" + VERB_LESS, clause[-60:], re.IGNORECASE))
    return metric, better, certain


def _amount_claim(sentence: str, match: re.Match, left: str, right: str, metric: str,
                  better: bool) -> dict | None:
    """The claim of an amount without its base ("saves 448 MiB": no ratio), or None when its
    unit names no metric the words allow (a part of :func:`_figure_claims`)."""
    known = unit_metric(match.group("unit"))
    if known is None or known[0] == "throughput" or metric not in (known[0], "time", "other"):
        return None
    metric = known[0] if metric != "time" or known[0] != "time" else metric
    return {"quote": sentence[:200], "metric": metric, "direction": direction_of(metric, better),
            "ratio": None, "bound": _bound(left, right), "scope": scope_of(sentence),
            "vs": _versus(right)}


def _figure_claims(sentence: str, taken: list[tuple[int, int]], budget: list[int]) -> list[dict]:
    """The claims of the multipliers, percentages and amounts of one sentence; ``budget[0]``
    counts down the figures a text may still read."""
    claims = []
    for pattern, kind in ((_MULT, "x"), (_PCT, "%"), (_BARE, "x"), (_AMOUNT, "amount")):
        for match in pattern.finditer(sentence):
            if any(a <= match.start() < b or a < match.end() <= b for a, b in taken):
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return claims
            # the words around a figure, at most a window each side (linear in the text's length)
            left = sentence[max(0, match.start() - _WINDOW):match.start()]
            right = sentence[match.end():match.end() + _WINDOW]
            if re.search(r"\d[x×]?$", left) or (kind == "x" and re.match(r"\s*[\d(]", right)):
                continue
            low = number_of(match.group("p") if "p" in match.groupdict() and match.group("p")
                       else match.group("n"))
            high = number_of(match.groupdict().get("n2")) or low
            saved = re.match(r"\s*(?:[\w-]+\s+){0,3}(?:saved|freed|less|fewer|faster|quicker)\b",
                             right)
            if kind == "amount" and (not saved and not re.search(VERB_LESS + r"|" + VERB_MORE,
                                                                  left[-50:], re.IGNORECASE)
                                     or re.search(r"\bto\s+(?:(?:less than|under|below)\s*|"
                                                  + _QUAL + r")*$", left)):
                continue
            below = kind == "x" and low is not None and max(low, high or low) < 1 and \
                re.match(r"\s*speed[- ]?ups?\b", right, re.IGNORECASE)  # "~0.63X speedup"
            if below:
                low, high = 1 / max(low, high or low), 1 / low
            if low is None or (kind == "x" and min(low, high) < 1) or low == high == 0 or \
                    (kind == "%" and match.group("sign") and not re.match(r"\s", right)):
                continue
            decimal = bool(re.search(r"[.\-–~]|to", match.group(0)))  # "1.9x", "1-2x", not "8x"
            sense = _sense(left, right, kind, decimal)
            if sense is None and kind == "%" and match.group("sign"):
                metric = metric_of(sentence) or "throughput"  # "+25% at batch 96-512"
                sense = (metric, (match.group("sign") == "+") == (metric == "throughput"), True)
            if sense is None:
                continue
            metric, better, certain = sense
            if below:
                better = False
            if kind == "amount":
                claim = _amount_claim(sentence, match, left, right, metric, better)
                if claim is not None:
                    taken.append(match.span())
                    claims.append(claim)
                continue
            fields = _ratio_fields(metric, better, min(low, high), max(low, high), kind, certain)
            if fields is None:
                continue
            taken.append(match.span())
            claims.append({"quote": sentence[:200], "metric": metric,
                           "direction": direction_of(metric, better), **fields,
                           "bound": _bound(left, right), "scope": scope_of(sentence),
                           "vs": _versus(right)})
    return claims


def _same(one: dict, other: dict, tolerance: float, overlap: bool = True) -> bool:
    """Same metric and direction, and ratios that overlap within ``tolerance`` (``overlap``)
    or agree at both ends within it."""
    def span(c):
        if c.get("ratio") is not None:
            return c["ratio"], c["ratio"]
        return c.get("ratio_low"), c.get("ratio_high")
    if one["metric"] != other["metric"] or one["direction"] != other["direction"]:
        return False
    (a, b), (c, d) = span(one), span(other)
    if None in (a, b, c, d):
        return a == c and b == d
    if not overlap:
        return abs(a - c) <= tolerance * c and abs(b - d) <= tolerance * d
    return c / (1 + tolerance) <= b and a <= d * (1 + tolerance)


def _restated(claim: dict, found: list[dict]) -> bool:
    """A range or two readings that an exact figure of the same sentence restates ("1.29x
    training-step time, or a 29% slowdown")."""
    if claim.get("ratio_low") is None:
        return False
    return any(other.get("ratio") is not None and other["metric"] == claim["metric"]
               and other["direction"] == claim["direction"] and other["vs"] == claim["vs"]
               and claim["ratio_low"] / 1.02 <= other["ratio"] <= claim["ratio_high"] * 1.02
               for other in found)


#: A text about an option that stays off unless asked for: its figures compare the option on
#: with off, not head with base ("Adds opt-in activation checkpointing ... 3.3x less memory").
_OPTION = re.compile(r"\bopt-in\b|\b(?:off|disabled) by default\b|\bpreserves? (?:the )?default "
                     r"behaviou?r\b|\bto enable\b|\bwhen enabled\b|\b(?:activation|gradient) "
                     r"checkpointing\b", re.IGNORECASE)
OPTION_OFF = "the option off"


def _text_claims(text: str, source: str) -> list[dict]:
    text = _clean(text)
    claims, budget = [], [MAX_FIGURES]
    for block in table_blocks(text):
        claims += table_claims(block)
    claims += block_pairs(text)
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(line for line in paragraph.splitlines()
                        if not line.strip().startswith("|"))
        taken: list[tuple[int, int]] = []
        pairs = pair_claims(flat, taken)
        lead = re.search(r"\bvs\.?\s+([\w.+-]+(?: [\w.+-]+)?)\)?:\s*$",
                         paragraph.splitlines()[0] if paragraph.strip() else "")
        for sentence in _sentences(paragraph):
            found = _figure_claims(sentence, [], budget)
            if lead and not re.match(BASE_WORDS, lead.group(1), re.IGNORECASE):
                # "Benchmark results (B200, BF16 state vs FP32 state):" then one line a claim
                found = [{**c, "vs": lead.group(1)} if c["vs"] == "base" else c for c in found]
            found = [c for c in found if not _restated(c, found)]
            claims += [c for c in found if not any(
                _same(c, p, 0.1) or c["ratio"] is None and "ratio_low" not in c
                and c["metric"] == p["metric"] for p in pairs)]
        claims += pairs
    if _OPTION.search(text):
        claims = [{**c, "vs": OPTION_OFF} if c["vs"] == "base" else c for c in claims]
    return [{**claim, "source": source} for claim in claims]


def parse_claims(title: str = "", body: str = "", commits: Iterable[str] = ()) -> list[dict]:
    """Every quantitative performance claim of a PR's ``title``, ``body`` and head ``commits``
    (messages), in that order; a claim said twice (the title again in the body or a commit) is
    kept once, at its first place. Never raises on any text."""
    claims: list[dict] = []
    texts = [(title, "title"), (body, "body")] + [(message, "commit") for message in commits]
    for text, source in texts:
        for claim in _text_claims((text or "")[:MAX_TEXT], source):
            if not any(_same(claim, seen, 0.02, overlap=False) and claim["vs"] == seen["vs"]
                       and (claim["source"] != seen["source"] or claim["quote"] == seen["quote"])
                       for seen in claims):
                claims.append(claim)
    return claims
