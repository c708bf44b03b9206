"""Measure each hand rule's precision on real pull requests; store the rules that name a strategy.

For every pull request of ``intent_real.jsonl`` (3,945 real merged PRs, each labelled by hand
with a strategy of STRATEGIES.md or ``unknown``; ``also``: further strategies it does), every
hand rule that fires (``runner.intent.precise.fired_rules``: the same definition a compare
uses) is counted, and counted right when its strategy is the label or in ``also``. A rule that
fired on at least ``MIN_FIRED`` PRs and was right on at least ``MIN_PRECISION`` of them goes
into ``runner/intent/precise.json``: the report names a strategy only on such a rule.

Because selecting rules on the PRs they are then scored on flatters them, the script also
prints the held-out reading: rules selected on ``real-train`` alone (with ``--min-fired-train``),
scored on the other splits.

Usage::

    python evaluation/intent_precision.py                 # measure, print, write precise.json
    python evaluation/intent_precision.py --smoke         # the first 300 PRs, nothing written

Runtime: about a minute on 2 CPUs for the 3,945 PRs (their diff excerpts).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.intent.precise import (  # noqa: E402
    MIN_FIRED, MIN_PRECISION, PRECISE_PATH, fired_rules)
from runner.intent.rules import CODE_RULES, TEXT_RULES  # noqa: E402

CORPUS = Path(__file__).with_name("intent_real.jsonl")


def strategy_of_rule(key: str) -> str:
    """The strategy of a rule key (``text:...`` / ``code:...``)."""
    kind, pattern = key.split(":", 1)
    rules = TEXT_RULES if kind == "text" else CODE_RULES
    return next(r.strategy for r in rules if r.pattern.pattern == pattern)


def count(rows: list[dict]) -> dict[str, list[int]]:
    """``{rule key: [fired, right]}`` over ``rows``."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        right = {row["label"], *row.get("also", [])}
        for key in fired_rules(title=row.get("title", ""), body=row.get("body", ""),
                               diff=row.get("diff", "")):
            tally[key][0] += 1
            tally[key][1] += strategy_of_rule(key) in right
    return dict(tally)


def select(tally: dict[str, list[int]], min_fired: int) -> list[str]:
    """The rule keys with at least ``min_fired`` firings and ``MIN_PRECISION`` right."""
    return sorted(k for k, (n, r) in tally.items() if n >= min_fired and r >= MIN_PRECISION * n)


def decide(rows: list[dict], chosen: list[str]) -> tuple[int, int]:
    """``(named, right)``: PRs on which the ``chosen`` rules name one strategy, and how many
    of those namings are right."""
    named = right = 0
    only = frozenset(chosen)
    for row in rows:
        hits = fired_rules(title=row.get("title", ""), body=row.get("body", ""),
                           diff=row.get("diff", ""), only=only)
        strategies = {strategy_of_rule(k) for k in hits}
        if len(strategies) == 1:
            named += 1
            right += strategies.pop() in {row["label"], *row.get("also", [])}
    return named, right


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--limit", type=int, default=0, help="only the first N PRs (a smoke)")
    parser.add_argument("--out", type=Path, default=PRECISE_PATH, help="where precise.json goes")
    parser.add_argument("--min-fired-train", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="the first 300 PRs; writes nothing")
    args = parser.parse_args(argv)
    if args.smoke:
        args.limit, args.out = args.limit or 300, None
    started = time.monotonic()
    rows = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    tally = count(rows)
    chosen = select(tally, MIN_FIRED)
    train = [r for r in rows if r.get("split") == "real-train"]
    held = [r for r in rows if r.get("split") != "real-train"]
    on_train = select(count(train), args.min_fired_train)
    named, right = decide(held, on_train)
    print(f"{len(rows)} real PRs; {len(tally)} rules fire; {len(chosen)} reach "
          f"{MIN_PRECISION:.0%} with >= {MIN_FIRED} firings:")
    for key in chosen:
        fired, good = tally[key]
        print(f"  {strategy_of_rule(key):<24} {good:>3}/{fired:<3} {key[:70]}")
    near = sorted(((r / n, n, k) for k, (n, r) in tally.items() if n >= MIN_FIRED), reverse=True)
    print("the next best rules (not named):")
    for share, fired, key in [x for x in near if x[2] not in chosen][:5]:
        print(f"  {strategy_of_rule(key):<24} {share:>4.0%} of {fired:<4} {key[:60]}")
    print(f"held out: {len(on_train)} rules selected on {len(train)} training PRs "
          f"(>= {args.min_fired_train} firings) name a strategy on {named} of {len(held)} "
          f"other PRs, right on {right}")
    data = {"corpus": args.corpus.name, "prs": len(rows), "rules_firing": len(tally),
            "min_precision": MIN_PRECISION, "min_fired": MIN_FIRED,
            "held_out": {"selected_on_train": len(on_train), "named": named, "right": right,
                         "of": len(held)},
            "rules": [{"rule": k, "strategy": strategy_of_rule(k), "fired": tally[k][0],
                       "right": tally[k][1]} for k in chosen]}
    if args.out is not None:
        args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out or 'nothing (--smoke)'} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
