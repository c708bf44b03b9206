"""Claims that are two values of one measure: before/after pairs in a sentence ("Before: 93.8
ms, After: 36.8 ms", "from 30 mins to 5 mins", "7022 -> 5845 ms", "3358 tok/s (was 3047)",
"13.8 TFLOPS vs FP32's 7.9 TFLOPS"), under Before/After headings, and in Markdown tables: one
claim per row of a before/after (or speed-up) table.

A table is a run of lines that start with ``|``; its header names the columns. A column whose
header reads *before* (``before``, ``baseline``, ``main``, ``old``, ...) and one that reads
*after* (``after``, ``this PR``, ``new``, ``optimized``, ...) give each row's ratio after/before;
without them, a ``speedup`` column gives it (``2.3x`` → time ratio 1/2.3). The unit comes from
the header (``Time (ms)``) or the cells; the row's label (its first cell) is the claim's scope
``case``. Pure; the sentences' parser is :mod:`runner.intent.claims`.
"""

from __future__ import annotations

import re

from .claim_words import (BASE_WORDS, NUMBER, TIME_LIKE, UNIT, direction_of, metric_of, number_of,
                          scope_of, unit_metric)

_BEFORE = re.compile(r"\b(?:before|baseline|main|master|old|original|base|previous|current|"
                     r"w/o|without|ref(?:erence)?|unfused|eager)\b", re.IGNORECASE)
_AFTER = re.compile(r"\b(?:after|this pr|pr|new|optimi[sz]ed|head|ours|patched|proposed|"
                    r"branch|fused|with|w/)\b", re.IGNORECASE)
_SPEEDUP = re.compile(r"speed-?up|\bratio\b", re.IGNORECASE)
_CELL_NUMBER = re.compile(r"(?P<num>" + NUMBER + r")\s*" + UNIT + r"?")
_OFF = re.compile(r"\s*(?:false|off|disabled|no|without)\s*", re.IGNORECASE)
_ON = re.compile(r"\s*(?:true|on|enabled|yes|with)\s*", re.IGNORECASE)
_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("*`") for cell in line.strip().strip("|").split("|")]


def _number(cell: str) -> tuple[float, str | None] | None:
    """The cell's number and unit (``"36.8 ms"`` → ``(36.8, "ms")``); None if no number."""
    match = _CELL_NUMBER.search(cell.replace("×", "x"))
    if not match or re.search(r"\d\s*[x×]\s*\d", cell):
        return None
    return float(match.group("num").replace(",", "")), match.group("unit")


_RULE_LINE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")


def table_blocks(text: str) -> list[list[str]]:
    """The Markdown tables of ``text``, leading pipes or not (GitHub renders both): each a list
    of its lines (header, rule, rows)."""
    lines, blocks, index = text.splitlines(), [], 1
    while index < len(lines):
        if _RULE_LINE.match(lines[index]) and "|" in lines[index - 1]:
            end = index + 1
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            if end - index > 1:
                blocks.append(lines[index - 1:end])
            index = end
        index += 1
    return blocks


def _columns(header: list[str]) -> tuple[int | None, int | None, int | None]:
    """Indexes of the before, after and speed-up columns (None where absent)."""
    before = after = speedup = None
    for index, name in enumerate(header[1:], start=1):
        if speedup is None and _SPEEDUP.search(name):
            speedup = index
        elif before is None and _BEFORE.search(name):
            before = index
        elif after is None and _AFTER.search(name):
            after = index
    return before, after, speedup


def _row_claim(label: str, ratio: float, metric: str, line: str, header: str) -> dict:
    if metric in ("time", "latency", "compile_time"):
        direction = "faster" if ratio < 1 else "slower"
    elif metric == "throughput":
        direction = "faster" if ratio > 1 else "slower"
    else:
        direction = "less" if ratio < 1 else "more"
    scope = scope_of(label + " " + header)
    scope["case"] = [label]
    return {"quote": line.strip()[:200], "metric": metric, "direction": direction,
            "ratio": round(ratio, 4), "bound": None, "scope": scope, "vs": "base"}


def _metric(header: str, unit: str | None) -> str | None:
    """The metric of a column from its header's words and the unit (None: not a measure)."""
    known = unit_metric(unit) if unit else None
    named = metric_of(header)
    if known is None:
        return named
    if known[0] == "time" and named in ("latency", "compile_time"):
        return named
    return known[0]


def _row_pairs(header: list[str], block: list[str]) -> list[dict]:
    """A table whose rows are the two sides (``| base | 68.3 | 14.62 |``, then ``| + this PR |
    118.3 | 8.45 |``): one claim per column that both rows fill with a number."""
    rows = [_cells(line) for line in block[2:]]
    old = next((r for r in rows if r and _BEFORE.search(r[0]) and not _AFTER.search(r[0])), None)
    new = next((r for r in rows if r and _AFTER.search(r[0]) and r is not old), None)
    vs = "base"
    if old is None or new is None:  # "| True | 4849 |" and "| False | 3954 |": an option
        old = next((r for r in rows if r and _OFF.fullmatch(r[0])), None)
        new = next((r for r in rows if r and _ON.fullmatch(r[0])), None)
        vs = "the option off"
    if old is None or new is None:
        return []
    claims = []
    for index, name in enumerate(header[1:], start=1):
        if index >= min(len(old), len(new)):
            break
        a, b = _number(old[index]), _number(new[index])
        unit_match = re.search(UNIT, name)
        unit = (a and a[1]) or (b and b[1]) or (unit_match.group("unit") if unit_match else None)
        metric = _metric(name, unit)
        if not a or not b or a[0] <= 0 or metric is None:
            continue
        line = f"{old[0]}: {old[index]} → {new[0]}: {new[index]} ({name})"
        if b[0] != a[0]:
            claims.append({**_row_claim(name, b[0] / a[0], metric, line, name), "vs": vs})
    return claims


def table_claims(block: list[str]) -> list[dict]:
    """One claim per row of a before/after or speed-up table (without ``source``); [] for a
    table that compares nothing (a list of shapes, a feature matrix)."""
    header, first = _cells(block[0]), _cells(block[2])
    if len(header) < len(first):  # "  | 1 card | 4 card" over "before | 242.8 | 1555.3"
        header = [""] * (len(first) - len(header)) + header
    if not _RULE.match(block[1]):
        return []
    before, after, speedup = _columns(header)
    if speedup is None and (before is None or after is None):
        return _row_pairs(header, block)
    header_text = " ".join(header)
    header_unit = re.search(r"\(\s*" + UNIT + r"\s*\)|\[\s*" + UNIT.replace("?P<unit>", "?:")
                            + r"\s*\]", header_text)
    claims = []
    # a table of counts names its metric in some rows ("host syncs / iteration") and not others
    rows_metric = next((metric_of(_cells(line)[0]) for line in block[2:]
                        if metric_of(_cells(line)[0])), None)
    for line in block[2:]:
        cells = _cells(line)
        if len(cells) < len(header) or not cells[0]:
            continue
        label = cells[0]
        if before is not None and after is not None:
            old, new = _number(cells[before]), _number(cells[after])
            if not old or not new or old[0] <= 0:
                continue
            # the unit: in the cells, else their columns' headers ("t/s master"), else the row's
            # words ("NSYS Avg Kernel time (us)"), else the table's header ("Time (ms)")
            words = [header[before], header[after]] + [c for c in cells if not _number(c)]
            named = next((m.group("unit") for w in words
                          for m in [re.search(r"(?<![A-Za-z/])" + UNIT, w)] if m
                          and unit_metric(m.group("unit"))), None)
            unit = old[1] or new[1] or named or (header_unit.group("unit") if header_unit
                                                 else None)
            known = unit_metric(unit) if unit else None
            metric = (known[0] if known else None) or metric_of(header_text) or \
                metric_of(label) or rows_metric or "time"
            if known and known[0] == "time":
                metric = metric_of(" ".join(words + [header_text])) or "time"
                metric = metric if metric in ("latency", "compile_time") else "time"
            scale_old = unit_metric(old[1])[1] if old[1] and unit_metric(old[1]) else 1.0
            scale_new = unit_metric(new[1])[1] if new[1] and unit_metric(new[1]) else 1.0
            if old[1] and new[1] and unit_metric(old[1])[0] != unit_metric(new[1])[0]:
                continue
            if new[0] * scale_new == old[0] * scale_old:
                continue  # "| dynamic-shape sites | 35 | 35 |": no change claimed
            claims.append(_row_claim(label, new[0] * scale_new / (old[0] * scale_old), metric,
                                     line, header_text))
        else:
            value = _number(cells[speedup].rstrip("xX×"))
            if not value or value[0] <= 0:
                continue
            claims.append(_row_claim(label, 1 / value[0], "time", line, header_text))
    return claims


_PAIRS = (
    re.compile(r"\bbefore\b[^\d]{0,30}?(?P<a>" + NUMBER + r")\s*" + UNIT.replace("unit", "ua")
               + r"?.{0,80}?\bafter\b[^\d]{0,30}?(?P<b>" + NUMBER + r")\s*"
               + UNIT.replace("unit", "ub") + r"?", re.IGNORECASE | re.DOTALL),
    re.compile(r"\bfrom\s+(?:~\s*)?(?P<a>" + NUMBER + r")\s*" + UNIT.replace("unit", "ua")
               + r"?\s+(?:down |up )?to\s+(?:~\s*)?(?P<b>" + NUMBER + r")(?:\s*[-–]\s*(?P<b2>"
               + NUMBER + r"))?\s*" + UNIT.replace("unit", "ub") + r"?"),
    re.compile(r"(?<![\w.])(?P<a>" + NUMBER + r")\s*" + UNIT.replace("unit", "ua")
               + r"\s+(?:down |up )?to\s+(?:~\s*)?(?P<b>" + NUMBER + r")\s*"
               + UNIT.replace("unit", "ub")),
    re.compile(r"(?<![\w.…])(?P<a>" + NUMBER + r")\s*" + UNIT.replace("unit", "ua")
               + r"?\s*(?:->|→|=>|⟶|-->)\s*(?P<b>" + NUMBER + r")\s*"
               + UNIT.replace("unit", "ub") + r"?"),
    re.compile(r"(?<![\w.])(?P<b>" + NUMBER + r")\s*" + UNIT.replace("unit", "ub")
               + r"\s*\((?:was|from|vs\.?|before:?)\s*(?P<a>" + NUMBER + r")\s*"
               + UNIT.replace("unit", "ua") + r"?\)"),
    re.compile(r"(?<![\w.])(?P<b>" + NUMBER + r")\s*" + UNIT.replace("unit", "ub")
               + r"(?:\s*\([^)]*\))?\s+vs\.?\s+(?P<name>[A-Za-z][\w.+'-]*\s+)?(?P<a>" + NUMBER
               + r")\s*" + UNIT.replace("unit", "ua") + r"?"),
)


#: "reduces barriers from 9 to 3": a count without a unit, after a verb of change.
_COUNTS = re.compile(r"(?P<what>[A-Za-z][\w-]{0,30}(?: [A-Za-z][\w-]{0,30})?) from (?P<a>" + NUMBER
                     + r") to (?P<b>" + NUMBER + r")(?![\w%×]|\s*(?:[x×%]|"
                     + UNIT.replace("?P<unit>", "?:") + r"))")
#: Counts that cost time when there are more of them.
_COSTS = re.compile(r"\b(?:barriers?|instructions?|kernels?|launch(?:es)?|calls?|syncs?|"
                    r"synchroni[sz]ations?|copies|allocations?|registers?|round[- ]trips?|"
                    r"conversions?|passes|reads|writes|transactions|bank conflicts|"
                    r"recompil\w*|graph breaks?|memory|time|latency|bytes)\b", re.IGNORECASE)
_CHANGE = re.compile(r"\b(?:reduc|cut|lower|decreas|drop|increas|rais|improv|shr[iu]nk)\w*",
                     re.IGNORECASE)


def _count_claims(sentence: str, taken: list[tuple[int, int]]) -> list[dict]:
    claims = []
    for match in _COUNTS.finditer(sentence):
        if any(a <= match.start() < b for a, b in taken) or \
                not _CHANGE.search(sentence[max(0, match.start() - 40):match.start() + 20]):
            continue
        a, b = number_of(match.group("a")), number_of(match.group("b"))
        if not a or not b or a == b or not _COSTS.search(match.group("what")):
            continue  # "Increased num_warps from 4 to 8": a setting, not a cost
        metric = metric_of(match.group("what")) or "other"
        ratio = b / a
        better = ratio > 1 if metric == "throughput" else ratio < 1
        taken.append(match.span())
        claims.append({"quote": match.group(0).strip()[:200], "metric": metric,
                       "direction": direction_of(metric, better), "ratio": round(ratio, 4),
                       "bound": None, "scope": scope_of(match.group(0)), "vs": "base"})
    return claims


def pair_claims(sentence: str, taken: list[tuple[int, int]]) -> list[dict]:
    """The claims of the pairs of one sentence (or paragraph); ``taken`` gets their spans."""
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
            a = number_of(match.group("a")) * (known_a or known)[1]
            b = number_of(match.group("b")) * (known_b or known)[1]
            if a <= 0 or b <= 0 or a == b:
                continue
            metric = known[0]
            if metric == "time":
                metric = metric_of(sentence[max(0, match.start() - 60):match.end() + 20]) or "time"
                if metric not in TIME_LIKE:
                    metric = "time"
            ratio = b / a
            better = ratio > 1 if metric == "throughput" else ratio < 1
            if "name" in match.groupdict() and not match.group("name"):
                # "(22ms vs. 8ms)": which side is head the sentence's words say, or nothing does
                said = _SAID.search(sentence[max(0, match.start() - 120):match.start()])
                if said is None:
                    continue
                if bool(re.match(r"slow|regress|wors", said.group(0), re.I)) == better:
                    ratio, better = 1 / ratio, not better
            if any(c["metric"] == metric and c["ratio"] == round(ratio, 4) for c in claims):
                continue  # "Before 7186MB. After 2758MB ... from 7186MB to 2758MB"
            upper = number_of(match.groupdict().get("b2"))
            span = {"ratio": round(ratio, 4)}
            if upper:  # "from 12 iter/sec to 15-16 iter/sec"
                ends = sorted((ratio, upper * (known_b or known)[1] / a))
                span = {"ratio": None, "ratio_low": round(ends[0], 4),
                        "ratio_high": round(ends[1], 4)}
            name = (match.groupdict().get("name") or "").strip().removesuffix("'s")
            taken.append(match.span())
            around = sentence[max(0, match.start() - 80):match.end() + 40]
            claims.append({"quote": match.group(0).strip()[:200], "metric": metric,
                           "direction": direction_of(metric, better), **span,
                           "bound": None, "scope": scope_of(around),
                           "vs": name if name and not re.match(BASE_WORDS, name, re.I) else "base"})
    return claims + _count_claims(sentence, taken)


#: The words that say which way a change went, for "A vs. B" without a name.
_SAID = re.compile(r"\b(?:improv\w*|faster|speed[- ]?ups?|reduc\w*|sav\w+|less|lower|fewer|"
                   r"slow\w*|regress\w*|wors\w*)\b", re.IGNORECASE)


_HEADING = re.compile(r"^[ \t#*]*(before|after)\b[^\n\d]{0,30}?[:*]*[ \t]*$",
                      re.IGNORECASE | re.MULTILINE)
_MEASURE = re.compile(r"(?<![\w.])(?P<n>" + NUMBER + r")\s*" + UNIT + r"(?P<what>[ \w]{0,20})")


def block_pairs(text: str) -> list[dict]:
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
            ratio = number_of(b.group("n")) * known_b[1] / (number_of(a.group("n")) * known_a[1])
            metric = known_a[0]
            if metric == "time":
                metric = metric_of(a.group("what")) or "time"
                metric = metric if metric in TIME_LIKE else "time"
            better = ratio > 1 if metric == "throughput" else ratio < 1
            if ratio > 0 and ratio != 1 and not any(
                    c["metric"] == metric and c["ratio"] == round(ratio, 4) for c in claims):
                claims.append({"quote": f"before {a.group(0).strip()}, after {b.group(0).strip()}",
                               "metric": metric, "direction": direction_of(metric, better),
                               "ratio": round(ratio, 4), "bound": None,
                               "scope": scope_of(a.group("what")), "vs": "base"})
    return claims
