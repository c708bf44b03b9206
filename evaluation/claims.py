"""Evaluate the claims parser (runner.intent.claims) on hand-labelled real PR texts.

Usage:
    python evaluation/claims.py [--set dev|test|all] [--errors] [--json FILE]

``evaluation/claims/dev.jsonl`` is the development set (the parser's rules were written and
tuned while reading it): rows with ``set`` ``dev``, and ``test1`` to ``test5``, the blind sets
of rounds 1 to 5, each scored once and read since; ``test.jsonl`` (``set`` ``test6``) is the
blind set of round 6, labelled before the parser read it, scored once with the rules frozen and
never used to change them. A row: ``{url, repo, pr, title, body, text, set, labels}``, each label
``{metric, direction, ratio | ratio_low + ratio_high, bound, vs}``; ``text`` says what was kept
(the title alone where the harvested description is a paraphrase, else a verbatim excerpt).

A found claim matches a label when metric and direction agree and the ratio is within 2 % of the
label's (a range or an ambiguous percentage: both ends within 2 %; a claim without a ratio, "saves
46 GB": neither has one); each label is matched once, greedily in order. Figures: precision
(matched / found), recall (matched / labelled), claim-free texts that got a claim (goal 0), and
comparison-point accuracy over the matched pairs (``vs`` base against another implementation).
Results: evaluation/RESULTS_claims.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runner.intent.claims import parse_claims  # noqa: E402

SETS = {"dev": ROOT / "evaluation" / "claims" / "dev.jsonl",
        "test": ROOT / "evaluation" / "claims" / "test.jsonl"}
TOLERANCE = 0.02


def load(name: str) -> list[dict]:
    """The rows of set ``name`` (``dev`` or ``test``)."""
    with open(SETS[name], encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _close(found: float | None, label: float | None) -> bool:
    if found is None or label is None:
        return found is None and label is None
    return abs(found - label) <= TOLERANCE * abs(label)


def matches(found: dict, label: dict) -> bool:
    """Same metric and direction, and the ratio within 2 % (both ends of a range)."""
    if found["metric"] != label["metric"] or found["direction"] != label["direction"]:
        return False
    if label.get("ratio_low") is not None:
        return _close(found.get("ratio_low"), label["ratio_low"]) and \
            _close(found.get("ratio_high"), label["ratio_high"])
    return found.get("ratio_low") is None and _close(found.get("ratio"), label.get("ratio"))


def score(rows: list[dict]) -> dict:
    """``{texts, claim_free, found, labelled, matched, precision, recall, false_in_free,
    vs_right, vs_pairs, errors}`` over ``rows``; ``errors``: the rows with a miss or an extra."""
    found_n = labelled_n = matched_n = free = false_in_free = vs_right = 0
    errors = []
    for row in rows:
        found = parse_claims(title=row["title"], body=row["body"])
        labels = row["labels"]
        found_n += len(found)
        labelled_n += len(labels)
        if not labels:
            free += 1
            false_in_free += bool(found)
        unmatched = list(found)
        missed = []
        for label in labels:
            hit = next((claim for claim in unmatched if matches(claim, label)), None)
            if hit is None:
                missed.append(label)
                continue
            unmatched.remove(hit)
            matched_n += 1
            vs_right += (hit["vs"] == "base") == (label["vs"] == "base")
        if missed or unmatched:
            errors.append({"url": row["url"], "missed": missed,
                           "extra": [{k: c.get(k) for k in ("metric", "direction", "ratio",
                                                            "ratio_low", "ratio_high", "vs",
                                                            "quote")} for c in unmatched]})
    return {"texts": len(rows), "claim_free": free, "found": found_n, "labelled": labelled_n,
            "matched": matched_n, "precision": matched_n / found_n if found_n else 1.0,
            "recall": matched_n / labelled_n if labelled_n else 1.0,
            "false_in_free": false_in_free, "vs_right": vs_right, "vs_pairs": matched_n,
            "errors": errors}


def line(name: str, result: dict) -> str:
    """One line of figures for a set."""
    vs = result["vs_right"] / result["vs_pairs"] if result["vs_pairs"] else 1.0
    return (f"{name}: {result['texts']} texts ({result['claim_free']} claim-free), "
            f"{result['labelled']} labelled claims, {result['found']} found, "
            f"precision {result['precision']:.1%}, recall {result['recall']:.1%}, "
            f"claims in claim-free texts {result['false_in_free']}, "
            f"vs right {result['vs_right']}/{result['vs_pairs']} ({vs:.0%})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["dev", "test", "all"], default="all")
    parser.add_argument("--errors", action="store_true", help="print each miss and extra claim")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = parser.parse_args(argv)
    names = ["dev", "test"] if args.set == "all" else [args.set]
    results = {}
    for name in names:
        results[name] = score(load(name))
        print(line(name, results[name]))
        if args.errors:
            for error in results[name]["errors"]:
                print("  ", json.dumps(error, ensure_ascii=False)[:400])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
