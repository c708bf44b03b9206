"""Evaluate the intent classifier on real merged pull requests (``intent_real.jsonl``).

Usage:
    python evaluation/intent_real.py [--split real-train|real-test6|all] [--errors] [--no-write] [--smoke]

The corpus holds real pull requests of public GPU / deep-learning repositories: the title as
written, a paraphrase of the description in our own words, the changed files and a short diff
excerpt (for pull requests whose repository snapshot could be read), and a label (a strategy id
of ../shared/STRATEGIES.md or ``unknown``) with a one-line reason. RESULTS_intent.md says how
it was collected.

``split`` is fixed by ``split_of(source, round_no)``: for rounds 1 to 3 a seeded hash of the
``owner/repo#number`` source put about 30 % of the pull requests of a collection round in that
round's blind split, the rest in ``real-train``. Round 1 (366 pull requests, rows without
``round``) had the blind split ``real-test``; it was scored once at the end of round 1 and is
training data since. Round 2 (rows with ``"round": 2``) had ``real-test2``, fixed by a new salt
before any of its labels was read; it was scored once with the first learned model. Round 3
(``"round": 3``) had ``real-test3``, fixed the same way and scored once at the end of round 3.
Round 4 (issue 34) drew no new pull requests: its blind split ``real-test4`` was a fresh draw of
a fifth of the rows of rounds 2 and 3 by its own salt; it was scored once and is training data
now.

Round 5 (rows with ``"round": 5``) drew 598 pull requests from 11 repositories that no earlier
round read. All of them were its blind split ``real-test5`` (``split_of(source, 5)`` is
``real-test5`` for every source); it was scored once (2026-12-02) and is training data now.

Round 6 (rows with ``"round": 6``; none yet) is the next such draw, from repositories that no
earlier round read, and all of it is the blind split ``real-test6`` (``BLIND``).
``current_split(row)`` is the split a row has now: ``real-test6`` for a round-6 row,
``real-train`` for every other. Nothing is tuned on ``real-test6``: neither the rules, nor the
label conventions' tuning, nor the model see it; it is scored once, at the end. While it is
empty this script says so and scores the other splits.

For each classifier (``rules``: the hand rules alone, ``runner.intent.classify_rules``;
``model``: the learned model, ``evaluation.intent_model.model.classify``) and each split, two
modes are scored:
``text``: title and description only; ``diff``: title, description and the diff excerpt.
Printed: top-1 accuracy on pull requests with a strategy (strict, and accepting the listed
``also`` label), the label among the first two candidates (top-2), how often a "probably"
answer was right, ``unknown`` precision and recall, the printed evidence that is only filler
words (``FILLER``), per-strategy precision / recall, the confusions and a reliability table of
the confidence. The blind split is also scored against its labels from before the label
conventions (``relabel``). With writing on (default) the ``<!-- intent-real-eval -->`` section
of RESULTS_intent.md is replaced.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from runner.intent import STRATEGIES, UNKNOWN, classify_rules  # noqa: E402
from evaluation.intent_model.model import classify  # noqa: E402

CORPUS = HERE / "intent_real.jsonl"
RESULTS = HERE / "RESULTS_intent.md"
BEGIN, END = "<!-- intent-real-eval:begin -->", "<!-- intent-real-eval:end -->"
#: Salt of the split hash and name of the blind split of each collection round; changing a salt
#: would unblind its split, so they are fixed. Rounds 5 and 6 have no salt: every one of their rows
#: is blind until the round is scored.
ROUNDS = {1: ("perfgate-intent-real-v1:", "real-test"), 2: ("perfgate-intent-real-v2:", "real-test2"),
          3: ("perfgate-intent-real-v3:", "real-test3"), 5: (None, "real-test5"), 6: (None, "real-test6")}
TEST_PERCENT = 30
#: The round whose blind split is the current one, and that split: every row of round 6 (pull
#: requests of repositories that no earlier round read; none yet); every other row, round 5's
#: scored ``real-test5`` included, is training data.
BLIND_ROUND = 6
BLIND = "real-test6"
#: Splits as they are now (``current_split``).
SPLITS = ("real-train", BLIND)
#: Words that say nothing of a mechanism: stop words, generic verbs of pull-request titles, and
#: the words issue 34 found quoted as "signals" ("per", "about", "without", "bit", "time"). A
#: printed evidence item whose words are all in it is filler. Written for this check, not taken
#: from the classifier (it does not read this list).
FILLER = frozenset("""a an the of to in on for and or with by is are be as at from this that it its into we our
will can when which was were has have not no nor but if than then so also up down out over under more less
most least much many few some any all each every other same new old use used uses using add adds added adding
make makes made making improve improves improved improving improvement speed speeds sped fast faster fastest
slow slower perf performance optimize optimizes optimized optimise optimises optimised optimization
optimisation better good large small big little time times bit bits per about without via support supports
do does done get gets set sets run runs way ways case cases one two first second only just now still very
well there here these those such like instead""".split())
#: Confidence bins of the reliability table (lower edges; the last bin includes 1.0).
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9)
CLASSIFIERS: dict[str, Callable[..., dict]] = {"rules": classify_rules, "model": classify}


def split_of(source: str, round_no: int = 1) -> str:
    """The split stored with a row of collection round ``round_no`` (``ROUNDS``): for a round with a
    salt, its blind split for about ``TEST_PERCENT`` % of sources (seeded SHA-256 of
    ``owner/repo#number``), else ``real-train``; for a round without one (5, 6), its blind split.

    Raises:
        KeyError: ``round_no`` is not a collection round of ``ROUNDS``.
    """
    salt, blind = ROUNDS[round_no]
    if salt is None:
        return blind
    digest = hashlib.sha256((salt + source).encode("utf-8")).hexdigest()
    return blind if int(digest[:8], 16) % 100 < TEST_PERCENT else "real-train"


def current_split(row: dict) -> str:
    """The split of ``row`` now: ``BLIND`` (``real-test6``) for a row of ``BLIND_ROUND``, else
    ``real-train`` (the earlier rounds' blind splits, ``real-test4`` and ``real-test5`` included,
    were each scored once and are training data now)."""
    return BLIND if row.get("round", 1) == BLIND_ROUND else "real-train"


def load(path: Path = CORPUS) -> list[dict]:
    """The corpus rows; raises SystemExit on a label that is not a strategy id, or a split that
    does not match ``split_of`` of the row's ``round``."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [r["source"] for r in rows
           if r["label"] not in STRATEGIES and r["label"] != UNKNOWN
           or any(a not in STRATEGIES for a in r.get("also", []))]
    if bad:
        raise SystemExit(f"labels that are not strategy ids: {bad}")
    moved = [r["source"] for r in rows if r.get("round", 1) not in ROUNDS
             or r["split"] != split_of(r["source"], r.get("round", 1))]
    if moved:
        raise SystemExit(f"split does not match split_of(): {moved}")
    return rows


def predict(row: dict, with_diff: bool, classifier: Callable[..., dict] = classify) -> dict:
    """``classifier`` on one row: title and body, plus the diff excerpt when ``with_diff``."""
    return classifier(title=row.get("title", ""), body=row.get("body", ""),
                      diff=row.get("diff", "") if with_diff else "")


def filler(item: str) -> bool:
    """Whether a printed evidence item (``'title: "fuse"'``, ``'+code csrc/k.cu: <line>'``) quotes
    only ``FILLER`` words: the text after its ``source:`` or ``path:`` prefix, lower-cased, split
    into words of letters."""
    quoted = item.split(": ", 1)[1] if ": " in item else item
    words = re.findall(r"[a-z]+", quoted.lower())
    return not words or all(w in FILLER for w in words)


def evaluate(rows: list[dict], results: list[dict]) -> dict:
    """Metrics of predictions ``results`` (``classify`` dicts, one per row)."""
    pairs = [(r["label"], p["strategy"], float(p.get("confidence") or 0.0), r) for r, p in zip(rows, results)]
    signal = [(t, p, r) for t, p, _, r in pairs if t != UNKNOWN]
    correct = sum(t == p for t, p, _ in signal)
    lenient = sum(t == p or p in r.get("also", []) for t, p, r in signal)
    # The label among the first two candidates (named or not), and the right level of STRATEGIES.md.
    top2 = sum(r["label"] in [c.get("strategy") for c in (p.get("candidates") or [])[:2]]
               for r, p in zip(rows, results) if r["label"] != UNKNOWN)
    level = sum(p in STRATEGIES and STRATEGIES[p][0] == STRATEGIES[t][0] for t, p, _ in signal)
    abstained = sum(p == UNKNOWN for _, p, _ in signal)
    true_unknown = sum(t == UNKNOWN for t, _, _, _ in pairs)
    called_unknown = sum(p == UNKNOWN for _, p, _, _ in pairs)
    both_unknown = sum(t == UNKNOWN and p == UNKNOWN for t, p, _, _ in pairs)
    per = {}
    for s in STRATEGIES:
        tp = sum(t == s and p == s for t, p, _, _ in pairs)
        fp = sum(t != s and p == s for t, p, _, _ in pairs)
        fn = sum(t == s and p != s for t, p, _, _ in pairs)
        if tp + fp + fn:
            per[s] = {"support": tp + fn, "precision": tp / (tp + fp) if tp + fp else None,
                      "recall": tp / (tp + fn) if tp + fn else None}
    named = [(c, t == p) for t, p, c, _ in pairs if p != UNKNOWN]
    table = []
    for i, low in enumerate(BINS):
        high = BINS[i + 1] if i + 1 < len(BINS) else 1.0001
        inside = [ok for c, ok in named if low <= c < high]
        table.append({"low": low, "high": min(high, 1.0), "n": len(inside), "right": sum(inside)})
    high = [ok for c, ok in named if c >= 0.8]
    probably = [r["label"] == p["strategy"] for r, p in zip(rows, results) if p.get("answer") == "probably"]
    printed = [str(item) for p in results for c in p.get("candidates") or [] for item in c.get("signals") or []]
    fillers = [item for item in printed if filler(item)]
    return {
        "n": len(pairs), "n_signal": len(signal), "n_unknown": true_unknown,
        "top1": correct / len(signal) if signal else None, "correct": correct,
        "lenient": lenient, "top2": top2, "level": level, "abstained": abstained, "wrong": len(signal) - correct - abstained,
        "unknown_precision": both_unknown / called_unknown if called_unknown else None,
        "unknown_recall": both_unknown / true_unknown if true_unknown else None,
        "unknown_called": called_unknown, "unknown_both": both_unknown,
        "per_strategy": per, "reliability": table,
        "high_n": len(high), "high_right": sum(high),
        "probably_n": len(probably), "probably_right": sum(probably),
        "evidence_n": len(printed), "filler_n": len(fillers), "fillers": Counter(fillers),
        "confusions": Counter((t, p) for t, p, _, _ in pairs if t != p),
        "errors": [(r["source"], t, p, c, r["title"]) for t, p, c, r in pairs if t != p],
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


def render(name: str, m: dict, errors: bool = False, details: bool = True) -> str:
    """Markdown of one evaluation."""
    out = [f"#### {name}: {m['n']} pull requests ({m['n_signal']} with a strategy, {m['n_unknown']} `unknown`)", ""]
    out.append(f"- top-1 on pull requests with a strategy: **{_pct(m['top1'])}** ({m['correct']}/{m['n_signal']}); "
               f"accepting the listed second label: {m['lenient']}/{m['n_signal']}; "
               f"among the first two candidates: {m['top2']}/{m['n_signal']}; right level (logic / execution / "
               f"infrastructure): {m['level']}/{m['n_signal']}; "
               f"called `unknown`: {m['abstained']}, wrong strategy: {m['wrong']}")
    out.append(f"- `unknown`: precision **{_pct(m['unknown_precision'])}** ({m['unknown_both']}/{m['unknown_called']} "
               f"called `unknown` are non-optimisations), recall **{_pct(m['unknown_recall'])}** "
               f"({m['unknown_both']}/{m['n_unknown']} non-optimisations called `unknown`)")
    out.append(f"- among the first two candidates (top-2): **{_pct(m['top2'] / m['n_signal'] if m['n_signal'] else None)}** "
               f"({m['top2']}/{m['n_signal']}); \"probably\" answers right: "
               + (f"**{_pct(m['probably_right'] / m['probably_n'])}** ({m['probably_right']}/{m['probably_n']})"
                  if m["probably_n"] else "none given"))
    out.append(f"- confidence >= 0.8: {m['high_right']}/{m['high_n']} right"
               + (f" ({_pct(m['high_right'] / m['high_n'])})" if m["high_n"] else ""))
    out.append(f"- printed evidence items: {m['evidence_n']}, of them only filler words: {m['filler_n']}"
               + (" (" + ", ".join(f"`{k}` {n}" for k, n in m["fillers"].most_common(5)) + ")" if m["filler_n"] else ""))
    if details:
        out += ["", "| confidence | named | right | share right |", "| --- | ---: | ---: | ---: |"]
        for b in m["reliability"]:
            share = _pct(b["right"] / b["n"]) if b["n"] else "–"
            out.append(f"| {b['low']:.1f}–{b['high']:.1f} | {b['n']} | {b['right']} | {share} |")
        out += ["", "| strategy | support | precision | recall |", "| --- | ---: | ---: | ---: |"]
        for s, v in m["per_strategy"].items():
            out.append(f"| {s} | {v['support']} | {_pct(v['precision'])} | {_pct(v['recall'])} |")
        if m["confusions"]:
            conf = ", ".join(f"{t} → {p} ({n})" for (t, p), n in m["confusions"].most_common())
            out += ["", f"Confusions (true → predicted): {conf}"]
    if errors:
        out.append("")
        out.extend(f"- `{s}` {t} → {p} ({c:.2f}): {title}" for s, t, p, c, title in m["errors"])
    out.append("")
    return "\n".join(out)


def write_section(text: str, path: Path = RESULTS, begin: str = BEGIN, end: str = END) -> None:
    """Replace the section between ``begin`` and ``end`` of RESULTS_intent.md (append it when missing)."""
    body = f"{begin}\n{text.rstrip()}\n{end}"
    old = path.read_text(encoding="utf-8")
    if begin in old and end in old:
        new = old[: old.index(begin)] + body + old[old.index(end) + len(end):]
    else:
        new = old.rstrip() + "\n\n" + body + "\n"
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=[*SPLITS, "all"], default=None, help="one split only")
    parser.add_argument("--classifier", choices=list(CLASSIFIERS), default=None, help="one classifier only")
    parser.add_argument("--errors", action="store_true", help="list every misclassified pull request")
    parser.add_argument("--no-write", action="store_true", help=f"do not update {RESULTS.name}")
    parser.add_argument("--smoke", action="store_true",
                        help="every split and classifier on every 20th pull request, nothing written (CI)")
    args = parser.parse_args(argv)
    rows = load()
    if args.smoke:
        rows, args.no_write = rows[::20], True
    splits = [args.split] if args.split else list(SPLITS)
    names = [args.classifier] if args.classifier else list(CLASSIFIERS)
    parts = []
    for split in splits:
        chosen = rows if split == "all" else [r for r in rows if current_split(r) == split]
        if not chosen:
            parts.append(f"#### {split}: empty (no pull requests in it yet)\n")
            continue
        before = [dict(r, label=r["relabel"]["from"], also=r["relabel"]["also_from"]) if "relabel" in r else r
                  for r in chosen]
        for name in names:
            for with_diff in (False, True):
                results = [predict(r, with_diff, CLASSIFIERS[name]) for r in chosen]
                mode = "title, description and diff" if with_diff else "title and description only"
                parts.append(render(f"{split}, {name}, {mode}", evaluate(chosen, results), errors=args.errors))
                if split == BLIND and before != chosen:
                    parts.append(render(f"{split}, {name}, {mode}, labels before the conventions",
                                        evaluate(before, results), details=False))
    text = "\n".join(parts)
    print(text)
    if not args.no_write and not args.split and not args.classifier and not args.errors:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
