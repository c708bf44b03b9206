"""The claims of the real pull requests of ``real_prs/`` judged from perfgate's interval and from
the independent check's: do the two judgements agree?

For each of the 23 cases with a claim (``real_prs/<case>/case.toml``: ``title`` and the quoted
``claim``), the claims are parsed (``runner.intent.claims.parse_claims``) and each is judged
(``runner.intent.claim_check.judge``: holds / partly / not shown / contradicted / untestable)
twice: against perfgate's interval and against the independent long timing's (8-10 fresh
processes per side, no perfgate code: ``evaluation/real_prs.py``), both as recorded in the
newest run of ``RESULTS_real_prs.md`` that has the case (run 4, 3, 2, then 1). The machine is
a CPU: a claim scoped to a GPU is "untestable here". Where the check's own interval includes no
change (it was ``unclear``), it cannot judge a claim; agreement is counted where it decided.

Usage::

    python evaluation/claim_checks.py [--write evaluation/RESULTS_claim_checks.md]
    python evaluation/claim_checks.py --smoke        # three cases

Seconds: it reads text; no benchmark runs.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from runner.intent.claim_check import (  # noqa: E402
    NOT_SHOWN, UNTESTABLE, check_claims)
from runner.intent.claims import parse_claims  # noqa: E402

RESULTS = HERE / "RESULTS_real_prs.md"
#: The tables read, newest first: (the heading of the section holding it, which of that
#: section's tables, the run it records). Run 3's table sits under run 4's heading.
TABLES = (("## Run 4", 0, "run 4"), ("## Run 4", 1, "run 3"), ("## Run 2", 0, "run 2"),
          ("## Run 1", 0, "run 1"))
_FACTOR = re.compile(r"×([0-9.e+-]+)|([+-]?[0-9.]+) %")


def change_value(text: str) -> float:
    """A head/base ratio from the report's change text: ``"×0.41"`` → 0.41, ``"-7.1 %"`` →
    0.929. Raises ValueError for anything else."""
    match = _FACTOR.fullmatch(text.strip())
    if not match:
        raise ValueError(f"not a change: {text!r}")
    return float(match.group(1)) if match.group(1) else 1 + float(match.group(2)) / 100


def interval(cell: str) -> tuple[float, float, float]:
    """``(point, low, high)`` of a cell such as ``"-46.0 % [×0.472, -38.2 %]"``."""
    point, rest = cell.split("[", 1)
    low, high = rest.rstrip("] ").split(",")
    return change_value(point), change_value(low), change_value(high)


def recorded_rows(text: str) -> dict[str, dict]:
    """``{case: {"run", "perfgate", "check"}}`` from the newest table that has the case."""
    rows: dict[str, dict] = {}
    for heading, which, run in TABLES:
        start = text.index(heading)
        end = text.find("\n## ", start + 1)
        tables: list[list[list[str]]] = []
        for line in text[start:end if end > 0 else None].splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "case" and len(cells) == 10:
                tables.append([])
            elif tables and len(cells) == 10 and re.fullmatch(r"[a-z]+_\d+", cells[0]):
                tables[-1].append(cells)
        for cells in tables[which] if which < len(tables) else []:
            if cells[0] not in rows:
                rows[cells[0]] = {"run": run, "perfgate": interval(cells[4]),
                                  "check": interval(cells[8])}
    return rows


def bench(interval_: tuple[float, float, float]) -> dict:
    point, low, high = interval_
    return {"name": "the case's benchmark", "change": {"ratio": point, "ci_low": low,
                                                       "ci_high": high}}


def judge_case(case: dict, row: dict) -> list[dict]:
    """Each claim of a case with its two judgements."""
    claims = parse_claims(case.get("title", ""), case.get("claim", ""), [])
    env = {"device": "cpu"}
    ours = check_claims(claims, [bench(row["perfgate"])], env)
    theirs = check_claims(claims, [bench(row["check"])], env)
    return [{"quote": a["quote"], "claimed": a["claimed"], "perfgate": a["verdict"],
             "check": b["verdict"], "agree": a["verdict"] == b["verdict"],
             "decided": b["verdict"] not in (NOT_SHOWN, UNTESTABLE)}
            for a, b in zip(ours, theirs)]


def _agreement(judged: dict) -> str:
    if judged["agree"]:
        return "yes"
    return "**no**" if judged["decided"] else "check undecided"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="write the Markdown table here")
    parser.add_argument("--smoke", action="store_true", help="three cases")
    args = parser.parse_args(argv)
    rows = recorded_rows(RESULTS.read_text(encoding="utf-8"))
    cases, controls = [], []
    for folder in sorted((HERE / "real_prs").iterdir()):
        if (folder / "case.toml").is_file():
            case = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8"))
            (controls if case.get("kind") == "control" else cases).append((folder.name, case))
    in_controls = sum(len(parse_claims(c.get("title", ""), c.get("claim", ""), []))
                      for _, c in controls)
    if args.smoke:
        cases = [c for c in cases if c[0] in ("kornia_3269", "kornia_2884", "einops_221")]
    lines = ["| case | run | claim | claimed | from perfgate's interval | from the check's "
             "| agree |", "|---|---|---|---|---|---|---|"]
    counts = {"claims": 0, "agree": 0, "decided": 0, "decided_agree": 0, "cases": len(cases),
              "without": []}
    for name, case in cases:
        judged = judge_case(case, rows[name])
        if not judged:
            counts["without"].append(name)
        for j in judged:
            counts["claims"] += 1
            counts["agree"] += j["agree"]
            if j["decided"]:
                counts["decided"] += 1
                counts["decided_agree"] += j["agree"]
            quote = j["quote"].replace("|", "\\|")[:80]
            lines.append(f"| {name} | {rows[name]['run']} | {quote} | {j['claimed']} | "
                         f"{j['perfgate'].replace('_', ' ')} | {j['check'].replace('_', ' ')} | "
                         f"{_agreement(j)} |")
    summary = (f"{counts['cases']} cases, {counts['claims']} claims; the judgements agree on "
               f"{counts['decided_agree']}/{counts['decided']} of the claims the check could judge "
               f"({counts['agree']}/{counts['claims']} in all); no quantitative claim in: "
               f"{', '.join(counts['without']) or 'none'}; claims found in the "
               f"{len(controls)} controls' texts: {in_controls}")
    table = "\n".join(lines)
    print(table)
    print(summary)
    if args.write:
        head = ("# Real pull requests' claims, judged from perfgate's interval and the check's\n\n"
                "`python evaluation/claim_checks.py --write evaluation/RESULTS_claim_checks.md`"
                " (seconds; no benchmark runs). " + " ".join(__doc__.split("\n\n")[1].split())
                + "\n\n")
        args.write.write_text(head + table + "\n\n" + summary + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
