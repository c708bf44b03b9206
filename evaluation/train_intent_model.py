"""Train the intent calibration model and measure a learned text classifier against the rules.

Usage:
    python evaluation/train_intent_model.py [--no-write] [--skip-text-model]

Needs scikit-learn (the ``dev`` extra); the model it writes is plain numbers that
``runner.intent.calibration`` reads without it. Trains only on ``real-train`` of
intent_real.jsonl and on the project's own texts of intent_dataset.jsonl except its held-out
``test4``; the blind ``real-test`` split is never read here.

1. Calibration: for every training text (title + description, and again with the diff
   excerpt when there is one) and each of its rule candidates, the features of
   ``runner.intent.calibration.features`` and whether that candidate is the label; a logistic
   regression fitted on them is written to runner/intent/calibration.json together with
   ``probable_above``, the lowest confidence at which at least ``PROBABLE_PRECISION`` of the
   named strategies were right in 5-fold cross-validation over ``real-train``.
2. Learned text classifier: a logistic regression over tf-idf of title / body words, diff
   tokens and the rule scores (runner/intent/features.py), scored against the rules by the
   same 5-fold cross-validation, to decide whether it should replace them. The figures replace
   the ``<!-- intent-model-eval -->`` section of RESULTS_intent.md.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from intent_real import CORPUS, load, write_section  # noqa: E402
from runner.intent import STRATEGIES, UNKNOWN  # noqa: E402
from runner.intent import calibration  # noqa: E402
from runner.intent.classifier import MAX_CANDIDATES, evidence  # noqa: E402

OWN = HERE / "intent_dataset.jsonl"
#: Own-text splits used for training (``test4`` stays held out).
OWN_SPLITS = ("dev", "dev2", "test", "test2", "test3")
FOLDS = 5
SEED = 0
C = 1.0
#: Share of named strategies that must be right above ``probable_above``.
PROBABLE_PRECISION = 0.8
BEGIN, END = "<!-- intent-model-eval:begin -->", "<!-- intent-model-eval:end -->"


def training_rows() -> tuple[list[dict], list[dict]]:
    """``(real-train rows, own rows)``; each own row gets ``source`` = its id."""
    real = [r for r in load(CORPUS) if r["split"] == "real-train" and r.get("round", 1) == 1]
    own = [json.loads(line) for line in OWN.read_text(encoding="utf-8").splitlines() if line.strip()]
    own = [dict(r, source=r["id"]) for r in own if r["split"] in OWN_SPLITS]
    return real, own


def views(row: dict) -> list[dict]:
    """The inputs a row is seen with: text only, and text with its diff when it has one."""
    base = {"title": row.get("title", ""), "body": row.get("body", ""), "labels": row.get("labels", ())}
    out = [base]
    if row.get("diff"):
        out.append(dict(base, diff=row["diff"]))
    return out


def candidate_examples(rows: list[dict]) -> tuple[list[list[float]], list[int]]:
    """Calibration examples: one per (view, rule candidate), label 1 when the candidate is right."""
    xs, ys = [], []
    for row in rows:
        for view in views(row):
            ev = evidence(**view)
            for strategy in ev.ranked[:MAX_CANDIDATES]:
                xs.append(calibration.features(ev, strategy))
                ys.append(int(strategy == row["label"]))
    return xs, ys


def fit_calibration(rows: list[dict]) -> dict:
    """A logistic regression on ``candidate_examples(rows)`` as the dict calibration.json holds."""
    from sklearn.linear_model import LogisticRegression

    xs, ys = candidate_examples(rows)
    clf = LogisticRegression(C=C, max_iter=5000)
    clf.fit(xs, ys)
    return {"features": list(calibration.FEATURES), "intercept": round(float(clf.intercept_[0]), 6),
            "coef": [round(float(c), 6) for c in clf.coef_[0]]}


def folds(rows: list[dict]) -> list[list[dict]]:
    """``FOLDS`` disjoint parts of ``rows`` after a shuffle seeded with ``SEED``."""
    order = list(range(len(rows)))
    random.Random(SEED).shuffle(order)
    return [[rows[i] for j, i in enumerate(order) if j % FOLDS == f] for f in range(FOLDS)]


def out_of_fold_named(real: list[dict], own: list[dict]) -> list[tuple[float, bool]]:
    """(calibrated confidence, right?) of the named strategy of every ``real-train`` view,
    each scored by a calibration fitted without its fold."""
    out = []
    parts = folds(real)
    for k, part in enumerate(parts):
        train = [r for j, p in enumerate(parts) if j != k for r in p] + own
        data = fit_calibration(train)
        data["probable_above"] = 1.0
        for row in part:
            for view in views(row):
                ev = evidence(**view)
                named = ev.named()
                if named != UNKNOWN:
                    out.append((calibration.probability(calibration.features(ev, named), data), named == row["label"]))
    return out


def probable_level(named: list[tuple[float, bool]], precision: float = PROBABLE_PRECISION) -> float:
    """Lowest confidence (steps of 0.05) from which at least ``precision`` of ``named`` are right."""
    for step in range(0, 20):
        level = step / 20
        above = [ok for c, ok in named if c >= level]
        if above and sum(above) / len(above) >= precision:
            return level
    return 1.0


def reliability(named: list[tuple[float, bool]]) -> list[str]:
    """Markdown rows of a reliability table of (confidence, right?) pairs."""
    lines = ["| confidence | named | right | share right |", "| --- | ---: | ---: | ---: |"]
    edges = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0001)
    for low, high in zip(edges, edges[1:]):
        inside = [ok for c, ok in named if low <= c < high]
        share = f"{100 * sum(inside) / len(inside):.0f} %" if inside else "–"
        lines.append(f"| {low:.1f}–{min(high, 1.0):.1f} | {len(inside)} | {sum(inside)} | {share} |")
    return lines


def text_model_cv(real: list[dict], own: list[dict]) -> dict:
    """5-fold top-1 of the learned text classifier and of the rules on ``real-train`` views."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    from runner.intent.features import extract

    def vector(feats: dict, idfs: dict) -> dict:
        out = {}
        for block, weight in (("text", 1.0), ("diff", 1.0)):
            values = {k: (1 + math.log(c)) * idfs[block][k] for k, c in feats[block].items() if k in idfs[block]}
            norm = math.sqrt(sum(v * v for v in values.values())) or 1.0
            out.update({k: weight * v / norm for k, v in values.items()})
        out.update({k: 2.0 * v for k, v in feats["rules"].items()})
        return out

    cache: dict = {}

    def feats_of(row: dict, view: dict) -> dict:
        key = (row["source"], "diff" in view)
        if key not in cache:
            cache[key] = extract(**view)
        return cache[key]

    right = Counter()
    total = Counter()
    parts = folds(real)
    for k, part in enumerate(parts):
        train = [r for j, p in enumerate(parts) if j != k for r in p] + own
        docs, labels = [], []
        for row in train:
            for view in views(row):
                docs.append(feats_of(row, view))
                labels.append(row["label"])
        idfs = {}
        for block in ("text", "diff"):
            df = Counter(key for d in docs for key in d[block])
            idfs[block] = {key: math.log((1 + len(docs)) / (1 + n)) + 1 for key, n in df.items()}
        vectorizer = DictVectorizer()
        clf = LogisticRegression(C=30.0, max_iter=5000)
        clf.fit(vectorizer.fit_transform([vector(d, idfs) for d in docs]), labels)
        for row in part:
            if row["label"] == UNKNOWN:
                continue
            for view in views(row):
                mode = "diff" if "diff" in view else "text"
                predicted = clf.predict(vectorizer.transform([vector(feats_of(row, view), idfs)]))[0]
                right["model", mode] += predicted == row["label"]
                right["rules", mode] += evidence(**view).named() == row["label"]
                total[mode] += 1
    return {(name, mode): (right[name, mode], total[mode]) for name in ("model", "rules") for mode in ("text", "diff")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="write neither calibration.json nor RESULTS_intent.md")
    parser.add_argument("--skip-text-model", action="store_true", help="do not cross-validate the learned text classifier")
    args = parser.parse_args(argv)
    real, own = training_rows()
    named = out_of_fold_named(real, own)
    level = probable_level(named)
    data = fit_calibration(real + own)
    data.update({"probable_above": level, "probable_precision": PROBABLE_PRECISION, "C": C,
                 "trained_on": {"real-train": len(real), "own texts": len(own)},
                 "rebuild": "python evaluation/train_intent_model.py"})
    high = [ok for c, ok in named if c >= level]
    lines = [f"Calibration (5-fold over `real-train`, out of fold, {len(named)} named strategies of "
             f"{len(real)} pull requests seen with and without their diff): `probable_above` = **{level:.2f}** "
             f"({sum(high)}/{len(high)} named strategies at or above it right).", ""]
    lines += reliability(named)
    if not args.skip_text_model:
        cv = text_model_cv(real, own)
        lines += ["", "Learned text classifier (logistic regression over tf-idf of title / body words, diff tokens "
                  "and the rule scores) against the rules, same folds, top-1 on `real-train` pull requests with a "
                  "strategy:", "", "| input | rules v4 | learned classifier |", "| --- | ---: | ---: |"]
        for mode, name in (("text", "title + description"), ("diff", "+ diff excerpt")):
            r, n = cv["rules", mode]
            m, _ = cv["model", mode]
            lines.append(f"| {name} | {100 * r / n:.0f} % ({r}/{n}) | {100 * m / n:.0f} % ({m}/{n}) |")
    text = "\n".join(lines)
    print(text)
    print(json.dumps(data, indent=2))
    if not args.no_write:
        calibration.MODEL_PATH.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        write_section(text, begin=BEGIN, end=END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
