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
  against base); ``source``: ``title``, ``body`` or ``commit``.

Deterministic rules over sentences (:mod:`.claim_words` the vocabulary, :mod:`.claim_tables`
the tables); code blocks, links and quoted replies are not read. Numbers that are no claims
(issue numbers, versions, shapes, tolerances, accuracy, dates) have no claim word beside them.
Figures: evaluation/RESULTS_claims.md.
"""

from __future__ import annotations

import re
from typing import Iterable

from .claim_tables import table_blocks, table_claims
from .claim_words import (BASE_WORDS, FASTER, LESS, MORE, NOT_PERF, NUMBER, REPAIR, SLOWER,
                          TIME_LIKE, UNIT, VERB_FASTER, VERB_LESS, VERB_MORE, VERSUS, metric_of,
                          scope_of, unit_metric)

_RANGE = (r"(?P<n>" + NUMBER + r")(?:\s*[x×%]?\s*(?:-|–|~|to)\s*(?P<n2>" + NUMBER + r"))?")
_MULT = re.compile(r"(?<![\w.])" + _RANGE + r"\s*(?:[x×X](?![\w\d])|times\b|-?fold\b)"
                   r"|(?<![\w.])[x×](?P<p>" + NUMBER + r")(?=\s)")
_PCT = re.compile(r"(?<![\w.])(?P<sign>[+-])?" + _RANGE + r"\s*(?:%|percent\b)")
_AMOUNT = re.compile(r"(?<![\w.])(?P<n>" + NUMBER + r")\s*" + UNIT)
_BARE = re.compile(r"(?<![\w.])(?P<n>\d+\.\d+)\s+(?=faster|slower)")
_QUAL = r"(?:~|≈|about|approx\.?|approximately|roughly|around|almost|nearly|up to|at least|over|" \
        r"more than|>=?|≥|\+|an? |additional|another|of|by|:)\s*"
_BY_END = re.compile(r"(?:by|of|:|is|to|at|with|were|was|gives?|giving|yields?)\s*(?:" + _QUAL
                     + r")*$", re.IGNORECASE)
_VALUE = NUMBER
_PAIRS = (
    re.compile(r"\bbefore\b[^\d]{0,30}?(?P<a>" + _VALUE + r")\s*" + UNIT.replace("unit", "ua")
               + r"?.{0,80}?\bafter\b[^\d]{0,30}?(?P<b>" + _VALUE + r")\s*"
               + UNIT.replace("unit", "ub") + r"?", re.IGNORECASE | re.DOTALL),
    re.compile(r"\bfrom\s+(?:~\s*)?(?P<a>" + _VALUE + r")\s*" + UNIT.replace("unit", "ua")
               + r"?\s+(?:down |up )?to\s+(?:~\s*)?(?P<b>" + _VALUE + r")\s*"
               + UNIT.replace("unit", "ub") + r"?"),
    re.compile(r"(?<![\w.])(?P<a>" + _VALUE + r")\s*" + UNIT.replace("unit", "ua")
               + r"?\s*(?:->|→|=>|⟶|-->)\s*(?P<b>" + _VALUE + r")\s*"
               + UNIT.replace("unit", "ub") + r"?"),
    re.compile(r"(?<![\w.])(?P<b>" + _VALUE + r")\s*" + UNIT.replace("unit", "ub")
               + r"\s*\((?:was|from|vs\.?|before:?)\s*(?P<a>" + _VALUE + r")\s*"
               + UNIT.replace("unit", "ua") + r"?\)"),
)


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
    text = text.replace(":arrow_down:", "↓").replace(":arrow_up:", "↑")
    text = re.sub(r"⬇️?|🔽", "↓", re.sub(r"⬆️?|🔼", "↑", text))
    return text.replace("`", "").replace("**", "").replace("\u00a0", " ")


def _sentences(text: str) -> list[str]:
    """Lines split at sentence ends (``. `` before a capital, ``;``); table lines left out."""
    out = []
    for line in text.splitlines():
        if line.strip().startswith("|"):
            continue
        for part in re.split(r"(?<=[.!?;])\s+(?=[A-Z(\[*-])|;\s*", line):
            if part.strip():
                out.append(part.strip())
    return out


def _num(text: str | None) -> float | None:
    return float(text.replace(",", "")) if text else None


def _direction(metric: str, better: bool) -> str:
    if metric in TIME_LIKE or metric == "throughput":
        return "faster" if better else "slower"
    return "less" if better else "more"


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
    if not values or min(low, high) <= 0:
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


def _sense(left: str, right: str, kind: str) -> tuple[str, bool, bool] | None:
    """``(metric, better, certain)`` of a figure from the words around it; None: no claim.

    ``certain``: the words fix the reading of a percentage ("30 % less time" is 0.7; "30 %
    faster" is 0.7 or 1/1.3)."""
    after = " ".join(re.findall(r"[\w/-]+", re.split(r"[,;:(]|\.\s", right)[0])[:3])
    parts = re.split(r"[,;:(\[\]]|\band\b|\bwhile\b|\bbut\b|\bwhich\b",
                     re.sub(r"\([^()]*\)", " ", left))
    clause = parts[-1]
    if len(parts) > 1 and not re.sub(_QUAL, "", clause).strip(" ~"):
        clause = parts[-2] + " " + clause  # "a performance gain, roughly 0.5%"
    if re.search(r"\b(?:another|additional|further)\s*$", clause):
        clause = left  # "a speedup of 21% and ... of another 3%"
    near = clause[-60:] + " " + after
    if re.search(NOT_PERF, near, re.IGNORECASE) or re.match(r"\s*(?:of|per)\b", right):
        return None
    word = None
    for name, pattern in (("slower", SLOWER), ("less", LESS), ("more", MORE), ("faster", FASTER)):
        hit = re.search(r"\b" + pattern + r"\b", after, re.IGNORECASE)
        if hit and (word is None or hit.start() < word[1]):
            word = (name, hit.start())
    verb_end = re.search(r"\b(?:" + VERB_LESS + "|" + VERB_MORE + r")\s*(?:by\s*)?(?:~|about|"
                         r"nearly|almost)?\s*$", clause, re.IGNORECASE)
    arrow = re.search(r"[↓↑]", clause)
    if word is None and arrow:
        word = ("less" if arrow.group(0) == "↓" else "more", 0)
    if word is None and (_BY_END.search(clause[-40:]) or not after or verb_end):
        for name, pattern in (("slower", SLOWER), ("less", VERB_LESS), ("more", VERB_MORE),
                              ("faster", VERB_FASTER), ("less", LESS), ("faster", FASTER)):
            if re.search(r"\b" + pattern, clause[-70:], re.IGNORECASE):
                word = (name, 0)
                break
    if word is None:
        return None
    name = word[0]
    metric = metric_of(after) or metric_of(clause[-35:])
    if metric is None and re.search(r"\b(?:time|overhead|duration|runtime|wall|step|"
                                    r"iteration)\b", near, re.IGNORECASE):
        metric = "time"
    metric = metric or metric_of(clause[-70:])
    if metric is None:
        metric = "time" if name in ("faster", "slower") else "other"
    repaired = name == "slower" and re.search(r"\b" + REPAIR, clause, re.IGNORECASE)
    better = {"faster": True, "less": True, "slower": False, "more": False}[name]
    if metric == "throughput" and name in ("less", "more"):
        better = name == "more"
    if repaired:
        better = True
    certain = name in ("less", "more") or metric == "throughput" or bool(repaired)
    if kind == "%" and name == "faster" and metric in TIME_LIKE:
        certain = bool(re.search(r"\b" + VERB_LESS, clause[-60:], re.IGNORECASE))
    return metric, better, certain


def _figure_claims(sentence: str, taken: list[tuple[int, int]]) -> list[dict]:
    claims = []
    for pattern, kind in ((_MULT, "x"), (_PCT, "%"), (_BARE, "x"), (_AMOUNT, "amount")):
        for match in pattern.finditer(sentence):
            if any(a <= match.start() < b or a < match.end() <= b for a, b in taken):
                continue
            left, right = sentence[:match.start()], sentence[match.end():]
            if re.search(r"\d[x×]?$", left) or (kind == "x" and re.match(r"\s*[\d(]", right)):
                continue
            low = _num(match.group("p") if "p" in match.groupdict() and match.group("p")
                       else match.group("n"))
            high = _num(match.groupdict().get("n2")) or low
            if kind == "amount" and (not re.search(VERB_LESS + r"|" + VERB_MORE, left[-50:],
                                                   re.IGNORECASE)
                                     or re.search(r"\bto\s+(?:(?:less than|under|below)\s*|"
                                                  + _QUAL + r")*$", left)):
                continue
            if low is None or (kind == "x" and min(low, high) < 1) or \
                    (kind == "%" and match.group("sign") and not re.match(r"\s", right)):
                continue
            sense = _sense(left, right, kind)
            if sense is None and kind == "%" and match.group("sign"):
                sense = (metric_of(sentence) or "throughput", True, True)
            if sense is None:
                continue
            metric, better, certain = sense
            if kind == "amount":
                known = unit_metric(match.group("unit"))
                if known is None or known[0] == "throughput" or metric not in (known[0], "time",
                                                                               "other"):
                    continue
                metric = known[0] if metric != "time" or known[0] != "time" else metric
                taken.append(match.span())
                claims.append({"quote": sentence[:200], "metric": metric,
                               "direction": _direction(metric, better), "ratio": None,
                               "bound": _bound(left, right), "scope": scope_of(sentence),
                               "vs": _versus(right)})
                continue
            if kind == "%" and match.group("sign"):
                better = (match.group("sign") == "+") == (metric == "throughput")
                certain = True
            fields = _ratio_fields(metric, better, min(low, high), max(low, high), kind, certain)
            if fields is None:
                continue
            taken.append(match.span())
            claims.append({"quote": sentence[:200], "metric": metric,
                           "direction": _direction(metric, better), **fields,
                           "bound": _bound(left, right), "scope": scope_of(sentence),
                           "vs": _versus(right)})
    return claims


def _pair_claims(sentence: str, taken: list[tuple[int, int]]) -> list[dict]:
    claims = []
    for pattern in _PAIRS:
        for match in pattern.finditer(sentence):
            if any(a <= match.start() < b for a, b in taken):
                continue
            ua, ub = match.group("ua"), match.group("ub")
            known_a, known_b = (unit_metric(ua) if ua else None), (unit_metric(ub) if ub else None)
            known = known_a or known_b
            if known is None or (known_a and known_b and known_a[0] != known_b[0]):
                continue
            a = _num(match.group("a")) * (known_a or known)[1]
            b = _num(match.group("b")) * (known_b or known)[1]
            if a <= 0 or b <= 0 or a == b:
                continue
            metric = known[0]
            if metric == "time":
                metric = metric_of(sentence[:match.end() + 20]) or "time"
                if metric not in TIME_LIKE:
                    metric = "time"
            ratio = b / a
            better = ratio > 1 if metric == "throughput" else ratio < 1
            taken.append(match.span())
            around = sentence[max(0, match.start() - 80):match.end() + 40]
            claims.append({"quote": match.group(0).strip()[:200], "metric": metric,
                           "direction": _direction(metric, better), "ratio": round(ratio, 4),
                           "bound": None, "scope": scope_of(around), "vs": "base"})
    return claims


_HEADING = re.compile(r"^[ \t#*]*(before|after)\b[^\n\d]{0,30}?[:*]*[ \t]*$",
                      re.IGNORECASE | re.MULTILINE)
_MEASURE = re.compile(r"(?<![\w.])(?P<n>" + NUMBER + r")\s*" + UNIT + r"(?P<what>[ \w]{0,20})")


def _block_pairs(text: str) -> list[dict]:
    """Claims of a "Before" heading and an "After" heading each over the same list of measures
    ("22.8 s duration, 6.79 GB peak memory" then "20.4 s duration, 5.40 GB peak memory")."""
    heads = list(_HEADING.finditer(text))
    claims = []
    for first, second in zip(heads, heads[1:]):
        if first.group(1).lower() != "before" or second.group(1).lower() != "after":
            continue
        end = heads[heads.index(second) + 1].start() if second is not heads[-1] else len(text)
        old = list(_MEASURE.finditer(text[first.end():second.start()]))
        new = list(_MEASURE.finditer(text[second.end():end][:600]))
        if not old or len(old) != len(new):
            continue
        for a, b in zip(old, new):
            known_a, known_b = unit_metric(a.group("unit")), unit_metric(b.group("unit"))
            if not known_a or not known_b or known_a[0] != known_b[0]:
                continue
            ratio = _num(b.group("n")) * known_b[1] / (_num(a.group("n")) * known_a[1])
            metric = known_a[0]
            if metric == "time":
                metric = metric_of(a.group("what")) or "time"
                metric = metric if metric in TIME_LIKE else "time"
            better = ratio > 1 if metric == "throughput" else ratio < 1
            if ratio > 0 and ratio != 1 and not any(
                    c["metric"] == metric and c["ratio"] == round(ratio, 4) for c in claims):
                claims.append({"quote": f"before {a.group(0).strip()}, after {b.group(0).strip()}",
                               "metric": metric, "direction": _direction(metric, better),
                               "ratio": round(ratio, 4), "bound": None,
                               "scope": scope_of(a.group("what")), "vs": "base"})
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


def _text_claims(text: str, source: str) -> list[dict]:
    text = _clean(text)
    claims = []
    for block in table_blocks(text):
        claims += table_claims(block)
    claims += _block_pairs(text)
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(line for line in paragraph.splitlines()
                        if not line.strip().startswith("|"))
        taken: list[tuple[int, int]] = []
        pairs = _pair_claims(flat, taken)
        for sentence in _sentences(paragraph):
            found = _figure_claims(sentence, [])
            claims += [c for c in found if not any(
                _same(c, p, 0.1) or c["ratio"] is None and "ratio_low" not in c
                and c["metric"] == p["metric"] for p in pairs)]
        claims += pairs
    return [{**claim, "source": source} for claim in claims]


def parse_claims(title: str = "", body: str = "", commits: Iterable[str] = ()) -> list[dict]:
    """Every quantitative performance claim of a PR's ``title``, ``body`` and head ``commits``
    (messages), in that order; a claim said twice (the title again in the body or a commit) is
    kept once, at its first place. Never raises on any text."""
    claims: list[dict] = []
    texts = [(title, "title"), (body, "body")] + [(message, "commit") for message in commits]
    for text, source in texts:
        for claim in _text_claims(text or "", source):
            if not any(_same(claim, seen, 0.02, overlap=False) and claim["vs"] == seen["vs"]
                       and (claim["source"] != seen["source"] or claim["quote"] == seen["quote"])
                       for seen in claims):
                claims.append(claim)
    return claims
