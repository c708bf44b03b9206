"""Regression history's series (pure): a fingerprint's ``main`` points in measurement order,
their change points, the run-to-run noise, the alerts and how they ended
(:mod:`bot.history` names the terms)."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

#: Fewest consecutive-point pairs before "within historical noise" is decided.
MIN_NOISE_PAIRS = 4
#: Quantile of the run-to-run |log change| that bounds "historical noise".
NOISE_QUANTILE = 0.95


# --------------------------------------------------------------------------- series

@dataclass(frozen=True)
class Point:
    """A stored point as the pure code sees it (``time``: aware UTC datetime)."""

    sha: str | None
    time: _dt.datetime
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    kind: str = "main"
    pr_number: int | None = None
    pr_url: str | None = None
    fingerprint: str | None = None
    ratio: float | None = None
    verdict: str | None = None
    run_url: str | None = None
    benchmark: str | None = None
    measure: str = "time"


@dataclass(frozen=True)
class ChangePoint:
    """A change point of a series with its context.

    ``index``: position in the series of the first point after the change; ``before``/
    ``after``: segment medians (seconds); ``ratio`` = after/before; ``prev_sha..sha`` the
    commit range that contains the change; ``prs``: ``[{number, url, title, head_sha}]`` merged there.
    """

    index: int
    sha: str | None
    prev_sha: str | None
    before: float
    after: float
    ratio: float
    p_value: float
    time: _dt.datetime | None = None
    prev_time: _dt.datetime | None = None
    prs: tuple = ()

    @property
    def commit_range(self) -> str:
        return f"{(self.prev_sha or '?')[:12]}..{(self.sha or '?')[:12]}"

    @property
    def is_regression(self) -> bool:
        return self.ratio > 1


@dataclass
class Series:
    """One (benchmark, measure, fingerprint) series: ``main`` points in order and their change points."""

    benchmark: str
    fingerprint: dict                     # Fingerprint.as_dict()
    points: list[Point]
    change_points: list[ChangePoint] = field(default_factory=list)
    measure: str = "time"                 # a key of MEASURES

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


def order_points(points: Iterable[Point]) -> list[Point]:
    """Points in measurement order (stable for equal times)."""
    return sorted(points, key=lambda p: p.time)


def prs_merged_between(prs: Iterable[dict], prev_sha: str | None, sha: str | None,
                       prev_time: _dt.datetime | None, time: _dt.datetime | None) -> list[dict]:
    """PRs merged in the commit range ``prev_sha..sha`` of a change point.

    ``prs``: ``{number, url, title, head_sha, merge_sha, merged_at (datetime|None)}``. A PR is
    in the range when its merge commit (or, for rebase merges, its head) is ``sha``, or when
    it was merged after the previous point was measured and no later than this point was
    (measurements follow pushes; a merge that lands while the previous run is still going
    can be attributed one range late). PRs with neither merge SHA nor time are not placed.
    """
    out = []
    for pr in prs:
        hit = sha is not None and sha in (pr.get("merge_sha"), pr.get("head_sha"))
        merged = pr.get("merged_at")
        if not hit and merged is not None and prev_time is not None and time is not None:
            hit = prev_time < merged <= time and pr.get("merge_sha") != prev_sha
        if hit:
            out.append({"number": pr["number"], "url": pr.get("url"), "title": pr.get("title"),
                        "head_sha": pr.get("head_sha")})
    return sorted(out, key=lambda p: p["number"])


def fingerprint_changes(points: Iterable[Point]) -> list[dict]:
    """Where a fingerprint appears for the first time after another was in use.

    ``points``: the ``main`` points of one benchmark across fingerprints (any order).
    Returns ``[{time, sha, fingerprint, previous}]`` in time order (``fingerprint`` and
    ``previous`` are keys); the first fingerprint of the benchmark is not a change.
    """
    seen: set[str] = set()
    last: str | None = None
    out = []
    for p in order_points(points):
        if p.fingerprint not in seen:
            if seen:
                out.append({"time": p.time, "sha": p.sha, "fingerprint": p.fingerprint, "previous": last})
            seen.add(p.fingerprint)
        last = p.fingerprint
    return out


# --------------------------------------------------------------------------- noise

def historical_noise(values: Sequence[float], change_indices: Sequence[int] = (),
                     quantile: float = NOISE_QUANTILE) -> tuple[float | None, int]:
    """Run-to-run noise of a series: the ``quantile`` of |log(v_i / v_(i-1))| within segments.

    Pairs that straddle a change point are left out (a level shift is not noise).
    Returns ``(noise as a fraction, e.g. 0.03 for 3 %, or None when fewer than
    MIN_NOISE_PAIRS pairs; number of pairs)``.
    """
    cuts = set(change_indices)
    diffs = [abs(math.log(values[i] / values[i - 1])) for i in range(1, len(values))
             if i not in cuts and values[i] > 0 and values[i - 1] > 0]
    if len(diffs) < MIN_NOISE_PAIRS:
        return None, len(diffs)
    diffs.sort()
    pos = quantile * (len(diffs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(diffs) - 1)
    q = diffs[lo] + (diffs[hi] - diffs[lo]) * (pos - lo)
    return math.expm1(q), len(diffs)


def within_noise(ratio: float | None, series: Series | None) -> dict:
    """Is a PR's measured change (head/base ``ratio``) within the benchmark's historical noise?

    Returns ``{within_noise: bool | None, noise: fraction | None, pairs: int}``; ``None``
    when there is no ratio or too little history to say.
    """
    if series is None or ratio is None or ratio <= 0:
        return {"within_noise": None, "noise": None, "pairs": 0}
    noise, pairs = historical_noise(series.values, [c.index for c in series.change_points])
    if noise is None:
        return {"within_noise": None, "noise": None, "pairs": pairs}
    return {"within_noise": abs(math.log(ratio)) <= math.log1p(noise), "noise": noise, "pairs": pairs}


# --------------------------------------------------------------------------- alerts

#: A later improvement counts as a fix when the level returns to within this fraction of
#: the level before the regression (DESIGN.md's default practical threshold).
RECOVERY_TOLERANCE = 0.02


def classify_alerts(series: Sequence[Series], accepts: Sequence[dict]) -> list[dict]:
    """Outcome of every flagged regression (a change point with ratio > 1) of a repository.

    Outcomes, first match wins:

    - ``accepted``: a ``/perf accept`` exists for a PR merged in the change point's range
      (for this benchmark, or for all benchmarks) given at the head that was merged (an accept
      at an earlier head does not cover later pushes; one without a SHA covers the PR), or
      for the change point's SHA;
    - ``reverted``: a later improvement change point of the same series brings the level
      back to at most ``before * (1 + RECOVERY_TOLERANCE)``, and a PR merged in that
      improvement's range has a title starting with "Revert";
    - ``fixed``: the same recovery without a revert PR;
    - ``open``: none of these (yet).

    ``accepts``: ``{pr_number, sha, benchmark}``; ``prs`` of a change point carry their merged
    ``head_sha``. Returns
    ``[{benchmark, fingerprint, sha, commit_range, ratio, status, by}]``.
    """
    out = []
    for s in series:
        for i, cp in enumerate(s.change_points):
            if not cp.is_regression:
                continue
            status, by = "open", None
            for a in accepts:
                if a.get("benchmark") not in (None, s.benchmark):
                    continue
                merged = any(p["number"] == a.get("pr_number") and a.get("sha") in (None, p.get("head_sha"))
                             for p in cp.prs)
                if merged or (a.get("sha") and a.get("sha") == cp.sha):
                    status, by = "accepted", a.get("user")
                    break
            if status == "open":
                for later in s.change_points[i + 1:]:
                    if later.ratio < 1 and later.after <= cp.before * (1 + RECOVERY_TOLERANCE):
                        revert = any((p.get("title") or "").lower().startswith("revert") for p in later.prs)
                        status, by = ("reverted" if revert else "fixed"), later.sha
                        break
            out.append({"benchmark": s.benchmark, "fingerprint": s.fingerprint.get("key"),
                        "sha": cp.sha, "commit_range": cp.commit_range, "ratio": cp.ratio,
                        "status": status, "by": by})
    return out


def alert_accuracy(alerts: Sequence[dict]) -> dict:
    """``{flagged, fixed, reverted, accepted, open, accuracy}``.

    ``accuracy`` = (fixed + reverted + accepted) / flagged: the share of flagged regressions
    that someone acted on or acknowledged, i.e. that were real and mattered; None when
    nothing was flagged. Open alerts count against it until they resolve.
    """
    counts = {k: sum(1 for a in alerts if a["status"] == k) for k in ("fixed", "reverted", "accepted", "open")}
    flagged = len(alerts)
    acted = counts["fixed"] + counts["reverted"] + counts["accepted"]
    return {"flagged": flagged, **counts, "accuracy": (acted / flagged) if flagged else None}


def carry_forward(doc: dict, latest: dict[str, "Point"]) -> dict:
    """``doc`` with each benchmark a selecting compare skipped (``selection.skipped``, runner.selection)
    given its last default-branch value where it has none: ``last = {sha, median, unit}`` from
    ``latest`` (``{benchmark: newest main point of the document's environment}``). Pure: a new
    document; ``doc`` itself is unchanged. Entries without a point stay as they are ("not measured
    in this run")."""
    selection = doc.get("selection")
    if not isinstance(selection, dict) or not selection.get("skipped"):
        return doc
    skipped = []
    for entry in selection["skipped"]:
        point = latest.get(entry.get("name")) if isinstance(entry, dict) else None
        if point is not None and not entry.get("last"):
            entry = {**entry, "last": {"sha": point.sha, "median": float(point.value), "unit": "s"}}
        skipped.append(entry)
    return {**doc, "selection": {**selection, "skipped": skipped}}
