"""Which estimate of one process pair makes the interval narrowest without false verdicts?

A benchmark, not a test: it re-reads kept ``results.json`` documents (``sensitivity.py --keep``)
and replays the looks of each benchmark with another estimate of one process pair's log-ratio,
then prints what each estimate would have decided, at how many pairs.

Estimates of one pair (base samples ``b``, head samples ``h``, seconds per call, one per round):

- ``hl``: the Hodges–Lehmann median of the paired round log-ratios ``ln(h_i / b_i)`` (what
  ``runner.stats.block_summary`` does now).
- ``min``: ``ln(min h) − ln(min b)``. For a CPU-bound loop interference only adds time, so each
  side's fastest sample is the one least disturbed (``timeit``'s advice; Chen & Revels, "Robust
  benchmarking in noisy environments", 2016, take the minimum for the same reason).
- ``q25``: the same with each side's lower quartile (linear interpolation): less exposed to one
  lucky sample than the minimum.
- ``lowhalf``: the mean of the logs of each side's faster half.
- ``hl+tost``: ``hl`` with ``unchanged`` tested on the equivalence interval of two one-sided
  tests (``1 − 2α/K``, :func:`runner.stats.equivalence_level`) instead of the reported ``1 − α/K``
  one; the other estimates use the reported interval, as perfgate did before the ``hl+tost`` rule.

Across pairs every estimate goes through the same :func:`runner.stats.blocked_estimate` (mean,
Student t on ``J − 1`` df, the run's ``process_noise`` floor), the same looks (the run's
``looks_pairs``, Bonferroni-split level) and Benjamini–Hochberg across each compare's benchmarks.

What the replay cannot do: look past the pairs the real run took. A benchmark the real run
decided at 2 pairs is replayed on those 2 only, so an estimate that would have needed more pairs
counts as ``inconclusive`` here — the replay is biased towards the estimate the run used (``hl``).
Rounds the run left out as disturbed are not recorded per round in results.json; the replay
keeps every round.

Usage::

    python evaluation/sensitivity.py --study aa --study durations --keep /tmp/keep
    python evaluation/pair_estimators.py /tmp/keep            # the table, per compare kind
    python evaluation/pair_estimators.py --smoke              # the committed sample (CI)
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner import stats  # noqa: E402

SAMPLE = Path(__file__).resolve().parent / "pair_estimators_sample.jsonl.gz"
ESTIMATES = ("hl", "hl+tost", "min", "q25", "lowhalf")


def pair_center(kind: str, base: list[float], head: list[float]) -> tuple[float, float, int]:
    """One pair's ``(center, se, n)`` in log units for estimate ``kind`` (``se`` is the
    Wilcoxon-based one of :func:`runner.stats.block_summary` for every kind: it is only reported).

    Raises:
        ValueError: an unknown kind, or fewer than 2 rounds.
    """
    center, se, n = stats.block_summary(base, head)
    if kind in ("hl", "hl+tost"):
        return center, se, n
    if kind == "min":
        return math.log(min(head)) - math.log(min(base)), se, n
    if kind == "q25":
        def q25(xs):  # linear interpolation between order statistics
            return statistics.quantiles(xs, n=4, method="inclusive")[0]
        return math.log(q25(head)) - math.log(q25(base)), se, n
    if kind == "lowhalf":
        def low(xs):
            xs = sorted(xs)[:max(1, len(xs) // 2)]
            return sum(math.log(x) for x in xs) / len(xs)
        return low(head) - low(base), se, n
    raise ValueError(f"unknown estimate {kind!r}")


def replay(change: dict, base: list[float], head: list[float], settings: dict, kind: str) -> dict:
    """The looks of one benchmark replayed with estimate ``kind``: the last look's estimate, its
    sequential p-value and the pairs it used."""
    pairs = [p for p in change.get("pairs") or [] if p.get("rounds", 0) >= 2]
    blocks = [pair_center(kind, base[p["start"]:p["start"] + p["rounds"]], head[p["start"]:p["start"] + p["rounds"]])
              for p in pairs]
    looks = settings.get("looks_pairs") or [2, 4, 8, 16, 32]
    k = len(looks)
    look_alpha = settings["alpha"] / k
    eq_level = stats.equivalence_level(look_alpha) if kind == "hl+tost" else None
    est, p_seq = None, 1.0
    for j in [j for j in looks if j <= len(blocks)] or [len(blocks)]:
        if j < 1:  # no complete pair
            break
        est = stats.blocked_estimate(blocks[:j], 1 - look_alpha, settings.get("process_noise", 0.003), eq_level)
        p_seq = stats.sequential_p(est.p_value, k)
        if stats.decide(est, settings["threshold"], p_seq < settings["alpha"],
                        settings.get("min_process_pairs", 2)) != "inconclusive":
            break
    if est is None:
        return {"est": None}
    return {"est": est, "p_seq": p_seq, "pairs": est.blocks, "centers": [b[0] for b in blocks]}


def kind_of(name: str) -> str:
    """The compare kind from a kept file's name (``aa-aa0``, ``durations-dur1e-06-aa0``,
    ``magnitudes-mag10-0``)."""
    import re

    m = re.fullmatch(r"durations-dur(.+)-(aa|x10)\d+", name)
    if m:
        return f"{'A/A' if m[2] == 'aa' else '×10'} {float(m[1]):g} s per call"
    m = re.fullmatch(r"magnitudes-mag(.+)-\d+", name)
    if m:
        return f"×{m[1]}"
    if name.startswith("aa-"):
        return "A/A 25 µs–2 ms"
    return name.split("-")[0]


def analyse(docs: list[tuple[str, dict]]) -> list[dict]:
    """Per compare kind and estimate: verdict counts, median and total pairs at the deciding look
    (the total is what the timing pass would have spent), median half-width (%), the spread of the
    pairs' estimates (sd, %)."""
    rows: dict[tuple[str, str], dict] = {}
    for name, doc in docs:
        settings = doc["settings"]
        for kind in ESTIMATES:
            outs = []
            for b in doc["benchmarks"]:
                ch = b.get("change") or {}
                bs, hs = (b.get("base") or {}).get("samples"), (b.get("head") or {}).get("samples")
                if not bs or not hs or not ch.get("pairs"):
                    continue
                outs.append(replay(ch, bs, hs, settings, kind))
            outs = [o for o in outs if o["est"] is not None]
            adjusted = stats.benjamini_hochberg([o["p_seq"] for o in outs])
            row = rows.setdefault((kind_of(name), kind), {"compare": kind_of(name), "estimate": kind, "n": 0,
                                                          "verdicts": {}, "pairs": [], "half": [], "sd": []})
            for o, q in zip(outs, adjusted):
                v = stats.decide(o["est"], settings["threshold"], q < settings["alpha"],
                                 settings.get("min_process_pairs", 2))
                row["n"] += 1
                row["verdicts"][v] = row["verdicts"].get(v, 0) + 1
                row["pairs"].append(o["pairs"])
                row["half"].append(100 * (math.log(o["est"].ci_high) - math.log(o["est"].ci_low)) / 2)
                if len(o["centers"]) > 1:
                    row["sd"].append(100 * statistics.stdev(o["centers"]))
    out = []
    for row in rows.values():
        out.append({**row, "median_pairs": statistics.median(row["pairs"]) if row["pairs"] else None,
                    "median_half_pct": statistics.median(row["half"]) if row["half"] else None,
                    "median_sd_pct": statistics.median(row["sd"]) if row["sd"] else None})
    return sorted(out, key=lambda r: (r["compare"], ESTIMATES.index(r["estimate"])))


def render(rows: list[dict]) -> str:
    lines = ["| compare | estimate | benchmarks | unchanged | regression | improvement | inconclusive "
             "| median pairs | pairs in all | median half-width | pairs' sd (median) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        v = r["verdicts"]
        lines.append(f"| {r['compare']} | {r['estimate']} | {r['n']} | {v.get('unchanged', 0)} | {v.get('regression', 0)} "
                     f"| {v.get('improvement', 0)} | {v.get('inconclusive', 0)} | {r['median_pairs']} | {sum(r['pairs'])} "
                     f"| {_pct(r['median_half_pct'])} | {_pct(r['median_sd_pct'])} |")
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f} %"


def slim(doc: dict) -> dict:
    """What the replay reads of a results.json (for the committed sample)."""
    keep_settings = ("threshold", "alpha", "looks_pairs", "process_noise", "min_process_pairs", "eq_level")
    return {"settings": {k: doc["settings"].get(k) for k in keep_settings},
            "benchmarks": [{"name": b["name"], "base": {"samples": (b.get("base") or {}).get("samples")},
                            "head": {"samples": (b.get("head") or {}).get("samples")},
                            "change": {"pairs": (b.get("change") or {}).get("pairs"),
                                       "verdict": (b.get("change") or {}).get("verdict")}}
                           for b in doc["benchmarks"]]}


def load(folder: Path | None) -> list[tuple[str, dict]]:
    if folder is None:
        with gzip.open(SAMPLE, "rt") as f:
            return [(r["name"], r["doc"]) for r in map(json.loads, f)]
    return [(p.stem, json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", help="kept results.json files (sensitivity.py --keep)")
    ap.add_argument("--smoke", action="store_true", help="the committed sample")
    ap.add_argument("--write-sample", default="", help="write the folder's documents, slimmed, as the sample")
    args = ap.parse_args(argv)
    if not args.folder and not args.smoke:
        ap.error("give a folder of kept results.json files, or --smoke")
    docs = load(None if args.smoke else Path(args.folder))
    if args.write_sample:
        with gzip.open(args.write_sample, "wt") as f:
            for name, doc in docs:
                f.write(json.dumps({"name": name, "doc": slim(doc)}) + "\n")
    rows = analyse(docs)
    print(render(rows))
    if args.smoke and not rows:
        raise SystemExit("the sample held no benchmark")
    return 0


if __name__ == "__main__":
    sys.exit(main())
