"""Claims in Markdown tables: one claim per row of a before/after (or speed-up) table.

A table is a run of lines that start with ``|``; its header names the columns. A column whose
header reads *before* (``before``, ``baseline``, ``main``, ``old``, ...) and one that reads
*after* (``after``, ``this PR``, ``new``, ``optimized``, ...) give each row's ratio after/before;
without them, a ``speedup`` column gives it (``2.3x`` → time ratio 1/2.3). The unit comes from
the header (``Time (ms)``) or the cells; the row's label (its first cell) is the claim's scope
``case``. Pure; the sentences' parser is :mod:`runner.intent.claims`.
"""

from __future__ import annotations

import re

from .claim_words import NUMBER, UNIT, metric_of, scope_of, unit_metric

_BEFORE = re.compile(r"\b(?:before|baseline|main|master|old|original|base|previous|current|"
                     r"w/o|without|ref(?:erence)?|unfused|eager)\b", re.IGNORECASE)
_AFTER = re.compile(r"\b(?:after|this pr|pr|new|optimi[sz]ed|head|ours|patched|proposed|"
                    r"branch|fused|with|w/)\b", re.IGNORECASE)
_SPEEDUP = re.compile(r"speed-?up|\bratio\b", re.IGNORECASE)
_CELL_NUMBER = re.compile(r"(?P<num>" + NUMBER + r")\s*" + UNIT + r"?")
_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("*`") for cell in line.strip().strip("|").split("|")]


def _number(cell: str) -> tuple[float, str | None] | None:
    """The cell's number and unit (``"36.8 ms"`` → ``(36.8, "ms")``); None if no number."""
    match = _CELL_NUMBER.search(cell.replace("×", "x"))
    if not match or re.search(r"\d\s*[x×]\s*\d", cell):
        return None
    return float(match.group("num").replace(",", "")), match.group("unit")


def table_blocks(text: str) -> list[list[str]]:
    """The Markdown tables of ``text``: each a list of its lines (header, rule, rows)."""
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip().startswith("|"):
            current.append(line)
            continue
        if len(current) >= 3:
            blocks.append(current)
        current = []
    if len(current) >= 3:
        blocks.append(current)
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


def table_claims(block: list[str]) -> list[dict]:
    """One claim per row of a before/after or speed-up table (without ``source``); [] for a
    table that compares nothing (a list of shapes, a feature matrix)."""
    header = _cells(block[0])
    if not _RULE.match(block[1]):
        return []
    before, after, speedup = _columns(header)
    if speedup is None and (before is None or after is None):
        return []
    header_text = " ".join(header)
    header_unit = re.search(r"\(\s*" + UNIT + r"\s*\)|\[\s*" + UNIT.replace("?P<unit>", "?:")
                            + r"\s*\]", header_text)
    claims = []
    for line in block[2:]:
        cells = _cells(line)
        if len(cells) < len(header) or not cells[0]:
            continue
        label = cells[0]
        if before is not None and after is not None:
            old, new = _number(cells[before]), _number(cells[after])
            if not old or not new or old[0] <= 0:
                continue
            unit = old[1] or new[1] or (header_unit.group("unit") if header_unit else None)
            known = unit_metric(unit) if unit else None
            metric = metric_of(header_text) or (known[0] if known else "time")
            if known and metric != known[0] and not (known[0] == "time"
                                                     and metric in ("latency", "compile_time")):
                metric = known[0]
            scale_old = unit_metric(old[1])[1] if old[1] and unit_metric(old[1]) else 1.0
            scale_new = unit_metric(new[1])[1] if new[1] and unit_metric(new[1]) else 1.0
            if old[1] and new[1] and unit_metric(old[1])[0] != unit_metric(new[1])[0]:
                continue
            claims.append(_row_claim(label, new[0] * scale_new / (old[0] * scale_old), metric,
                                     line, header_text))
        else:
            value = _number(cells[speedup].rstrip("xX×"))
            if not value or value[0] <= 0:
                continue
            claims.append(_row_claim(label, 1 / value[0], "time", line, header_text))
    return claims
