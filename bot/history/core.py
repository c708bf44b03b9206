"""Regression history, the pure part: fingerprints, points, series, noise, alerts, replies.

Plain data in, plain data out; no database, no Flask. ``bot.history.store`` is the shell
that reads and writes the tables and calls these.

Terms: a *point* is one benchmark's value of one measure in one result: ``time``, its median
time per call (seconds) with the confidence interval of that median, or ``memory``, its peak
memory (bytes: the median over its processes, with their range; :data:`MEASURES`). A *series* is
the ``main`` points (single-revision ``perfgate run`` results, i.e. history runs on the default
branch) of one (repository, benchmark, measure, environment fingerprint), in measurement order. PR results are points of kind
``pr``: drawn as separate markers, never part of a series. A new fingerprint starts a new
series, so an upgraded driver or another GPU model is never reported as a regression.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

from runner import results as results_schema
from runner.report.units import fmt_change, fmt_time

#: Fewest consecutive-point pairs before "within historical noise" is decided.
MIN_NOISE_PAIRS = 4
#: Quantile of the run-to-run |log change| that bounds "historical noise".
NOISE_QUANTILE = 0.95
#: ``/perf history`` and the repo page show this many of the latest change points.
RECENT_CHANGE_POINTS = 5

_REPOSITORY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")

#: What a point measures, and its unit: ``time`` seconds per call, ``memory`` peak bytes (a side's
#: ``memory.peak_bytes``, runner.measures), ``compile`` seconds torch.compile took to compile the
#: first call, cold (a side's ``compile.compile_s``, where the benchmark compiles).
MEASURES = {"time": "s", "memory": "B", "compile": "s"}


def is_repository_name(text: str) -> bool:
    """True for ``owner/name`` as GitHub spells repositories."""
    return bool(_REPOSITORY_RE.match(text or ""))


# --------------------------------------------------------------------------- fingerprints

@dataclass(frozen=True)
class Fingerprint:
    """What must be equal for two measurements to belong to one series.

    ``gpu``: the device model (``environment.device_name``; on CPU ``"cpu: <cpu>"``);
    ``driver``, ``cuda``, ``torch``: versions; ``runner_label``: the self-hosted runner label
    (``environment.runner_label``, else ``environment.runner`` as a string or ``{label}``).
    """

    gpu: str | None
    driver: str | None
    cuda: str | None
    torch: str | None
    runner_label: str | None

    @property
    def key(self) -> str:
        """16 hex digits of SHA-256 over the canonical JSON of the five fields."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        """A short human label, e.g. ``NVIDIA H200 · driver 550.54 · CUDA 12.4 · torch 2.5.1 · gpu-h200``."""
        parts = [self.gpu or "unknown device"]
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.cuda:
            parts.append(f"CUDA {self.cuda}")
        if self.torch:
            parts.append(f"torch {self.torch}")
        if self.runner_label:
            parts.append(self.runner_label)
        return " · ".join(parts)

    def as_dict(self) -> dict:
        return {**asdict(self), "key": self.key, "label": self.label}


def _text(value) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def fingerprint_of(environment: dict) -> Fingerprint:
    """The :class:`Fingerprint` of a results.json ``environment`` object."""
    env = environment or {}
    device = (env.get("device") or "").lower()
    gpu = _text(env.get("device_name"))
    if device == "cpu" or (gpu is None and device != "cuda"):
        gpu = f"cpu: {_text(env.get('cpu')) or gpu or 'unknown'}"
    runner = env.get("runner_label") or env.get("runner")
    if isinstance(runner, dict):
        runner = runner.get("label") or runner.get("name")
    return Fingerprint(gpu=gpu, driver=_text(env.get("driver")), cuda=_text(env.get("cuda")),
                       torch=_text(env.get("torch")), runner_label=_text(runner))


# --------------------------------------------------------------------------- points

def parse_time(text: str | None) -> _dt.datetime | None:
    """ISO-8601 (``Z`` or offset; naive is taken as UTC) → aware UTC ``datetime``, or None."""
    if not text:
        return None
    try:
        value = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.astimezone(_dt.timezone.utc)


def iso(value: _dt.datetime | None) -> str | None:
    """Aware datetime → ``2026-01-02T03:04:05Z`` (UTC, seconds)."""
    if value is None:
        return None
    return value.astimezone(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class PointRecord:
    """One benchmark value extracted from a results document (before it is stored)."""

    benchmark: str
    kind: str                 # "main" | "pr" | "compare"
    sha: str | None
    value: float              # seconds per call (median)
    ci_low: float | None
    ci_high: float | None
    ratio: float | None       # head/base of a compare, else None
    verdict: str | None
    measure: str = "time"     # a key of MEASURES


def result_kind(doc: dict) -> str:
    """``run`` for a single-revision result (``base`` is null), else ``compare``."""
    return "run" if doc.get("base") is None else "compare"


def pull_request_of(doc: dict) -> dict | None:
    """The optional top-level ``pull_request`` ``{number, url, title?, merge_commit_sha?, merged_at?}``.

    Returns None when absent or without an integer ``number``.
    """
    pr = doc.get("pull_request")
    if not isinstance(pr, dict):
        return None
    number = pr.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        return None
    return pr


def points_of(doc: dict) -> list[PointRecord]:
    """The history points of a (valid) results.json document.

    A ``run`` result gives ``main`` points from each benchmark's ``head``; a ``compare`` result
    gives its head medians as ``pr`` points when the document names a PR, else as ``compare``
    points. Each point carries the interval the runner stored with the median
    (``ci_low``/``ci_high``; None when the document has none: nothing is recomputed).
    Benchmarks whose head failed or has no median are skipped. Points are times: a benchmark
    that reports a bigger-is-better throughput (``direction: bigger``, a unit ``X/s``) gives the
    time per X (the reciprocal, its interval inverted), so its change points and alerts read as
    every other series'; one that reports another unit (``MB``, a score) gives no time point, and a memory-valued one (``measure:
    memory``, asv's ``peakmem_*``/``mem_*``) only its memory point. A ``perfgate bisect`` document (its ``bisect``
    section) gives no point at all: it is a search, kept for its run page.
    Where the head's peak memory was measured (``head.memory.peak_bytes`` > 0) the benchmark also gives a ``memory`` point: the
    median over its processes, their range as the interval, the memory change's ratio and verdict;
    where it compiled (``head.compile.compile_s`` > 0), a ``compile`` point: the first call's cold
    compile seconds, the median over its processes with their range, the compile-time change's ratio.
    """
    if doc.get("bisect") is not None:
        return []
    kind = result_kind(doc)
    point_kind = "pr" if pull_request_of(doc) else ("main" if kind == "run" else "compare")
    sha = (doc.get("head") or {}).get("sha")
    out = []
    for bench in doc.get("benchmarks") or []:
        head = results_schema.side_of(bench, "head")
        value = head.get("median")
        if head.get("error") or value is None or not (value > 0) or math.isinf(value):
            continue
        low, high = head.get("ci_low"), head.get("ci_high")
        unit = bench.get("unit") or "s"
        if results_schema.direction_of(bench) == "bigger" and unit.endswith("/s"):
            # a throughput X/s is kept as the time per X (its reciprocal), so the series reads as times
            value = 1.0 / value
            low, high = (1.0 / high if high else None), (1.0 / low if low else None)
        elif unit != "s" and not results_schema.is_memory_valued(bench):
            continue  # the history keeps times and memory; other measures are in the report only
        change = results_schema.change_of(bench)
        if unit == "s" or results_schema.direction_of(bench) == "bigger":
            out.append(PointRecord(benchmark=bench["name"], kind=point_kind, sha=sha, value=float(value),
                                   ci_low=low, ci_high=high, ratio=change.get("ratio"),
                                   verdict=change.get("verdict")))
        memory = head.get("memory") if isinstance(head.get("memory"), dict) else {}
        peak = memory.get("peak_bytes")
        if isinstance(peak, int) and peak > 0:
            spread = [v for v in memory.get("processes") or [] if isinstance(v, int)]
            mem_change = change.get("memory") if isinstance(change.get("memory"), dict) else {}
            out.append(PointRecord(benchmark=bench["name"], kind=point_kind, sha=sha, value=float(peak),
                                   ci_low=float(min(spread)) if spread else None,
                                   ci_high=float(max(spread)) if spread else None,
                                   ratio=mem_change.get("ratio"), verdict=mem_change.get("verdict"),
                                   measure="memory"))
        compiled = head.get("compile") if isinstance(head.get("compile"), dict) else {}
        seconds = compiled.get("compile_s")
        if isinstance(seconds, (int, float)) and seconds > 0 and math.isfinite(seconds):
            spread = [float(v) for v in compiled.get("compile_s_values") or [] if isinstance(v, (int, float))]
            timing = (change.get("compile") or {}).get("compile_s") if isinstance(change.get("compile"), dict) else None
            out.append(PointRecord(benchmark=bench["name"], kind=point_kind, sha=sha, value=float(seconds),
                                   ci_low=min(spread) if spread else None, ci_high=max(spread) if spread else None,
                                   ratio=(timing or {}).get("ratio"), verdict=None, measure="compile"))
    return out


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


# --------------------------------------------------------------------------- JSON and text

def series_json(series: Series, *, detailed: bool = False) -> dict:
    """The CLI's JSON shape of one series::

        {benchmark, measure, unit, fingerprint, points: [{sha, time, value, ci_low, ci_high}],
         change_points: [{index, sha, before, after, ratio}]}

    ``fingerprint`` is the key. ``detailed`` (the JSON API) adds ``fingerprint_label``,
    ``fingerprint_fields`` and per change point ``prev_sha``, ``commit_range``, ``p_value``,
    ``prs``.
    """
    doc = {
        "benchmark": series.benchmark,
        "measure": series.measure,
        "unit": MEASURES.get(series.measure),
        "fingerprint": series.fingerprint.get("key"),
        "points": [{"sha": p.sha, "time": iso(p.time), "value": p.value, "ci_low": p.ci_low,
                    "ci_high": p.ci_high} for p in series.points],
        "change_points": [],
    }
    for c in series.change_points:
        item = {"index": c.index, "sha": c.sha, "before": c.before, "after": c.after, "ratio": c.ratio}
        if detailed:
            item.update(prev_sha=c.prev_sha, commit_range=c.commit_range, p_value=c.p_value,
                        time=iso(c.time), prs=list(c.prs))
        doc["change_points"].append(item)
    if detailed:
        doc["fingerprint_label"] = series.fingerprint.get("label")
        doc["fingerprint_fields"] = {k: series.fingerprint.get(k)
                                     for k in ("gpu", "driver", "cuda", "torch", "runner_label")}
    return doc


def bench_url(public_url: str | None, repository: str, benchmark: str) -> str:
    """Absolute (or, without ``public_url``, root-relative) URL of a benchmark's history page."""
    from urllib.parse import quote

    path = f"/{repository}/bench/{quote(benchmark, safe='', errors='replace')}"
    return (public_url or "").rstrip("/") + path


def history_table_markdown(series: Sequence[Series], *, repository: str, public_url: str | None,
                           benchmark: str | None = None, limit: int = RECENT_CHANGE_POINTS) -> str:
    """The ``/perf history [BENCH]`` reply: a short Markdown table and the link(s).

    One row per series: benchmark, environment, latest value, points, and the ``limit``
    latest change points (``+5.0 % at abc1234 (#12)``). Without series, one sentence.
    """
    from runner.report.escape import md_cell, md_code, md_text

    if not series:
        what = md_code(benchmark) if benchmark else "this repository"
        return f"No history stored for {what} yet."
    lines = ["| benchmark | environment | latest | points | recent change points |",
             "|---|---|---:|---:|---|"]
    for s in series:
        latest = s.points[-1].value if s.points else None
        cps = []
        for c in s.change_points[-limit:][::-1]:
            prs = ", ".join(f"#{p['number']}" for p in c.prs)
            cps.append(f"{fmt_change(c.ratio)} at {md_code((c.sha or '?')[:7])}" + (f" ({prs})" if prs else ""))
        name = f"[{md_code(s.benchmark)}]({bench_url(public_url, repository, s.benchmark)})"
        lines.append(f"| {md_cell(name)} | {md_text(s.fingerprint.get('label', ''))} | {fmt_time(latest)} | "
                     f"{len(s.points)} | {md_cell('; '.join(cps)) or 'none'} |")
    root = (public_url or "").rstrip("/") + f"/{repository}"
    lines += ["", f"Full history: {root}"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- overview

def repository_overview(series: Sequence[Series], side_points: Sequence[Point], alerts: Sequence[dict],
                        recent: int = 10, change_series: Sequence[Series] | None = None,
                        point_counts: Mapping[tuple[str, str], int] | None = None) -> dict:
    """What the repository page and ``GET /api/OWNER/REPO`` show.

    ``series``: those of the benchmarks to list (one page; the last point of each is its
    latest); ``point_counts``: their lengths by (benchmark, fingerprint key) when ``series``
    hold only their newest point (default: ``len(points)``); ``change_series``: every
    series' change points (points may be empty), for the recent change points (default
    ``series``).

    Returns ``{benchmarks: [{name, series: [{fingerprint, fingerprint_label, latest: {sha,
    time, value, ci_low, ci_high}, points, latest_change: {sha, commit_range, ratio, time}
    | None}], latest_pr: {number, sha, ratio, verdict, value} | None}], recent_change_points:
    [{benchmark, fingerprint_label, sha, commit_range, before, after, ratio, time, prs,
    status}], alert_accuracy: {...}}``; times are ISO strings, values seconds.
    """
    status_of = {(a["benchmark"], a["fingerprint"], a["sha"]): a["status"] for a in alerts}
    by_name: dict[str, dict] = {}
    recent_cps = []
    for s in series:
        entry = by_name.setdefault(s.benchmark, {"name": s.benchmark, "series": [], "latest_pr": None})
        last = s.points[-1]
        cp = s.change_points[-1] if s.change_points else None
        entry["series"].append({
            "fingerprint": s.fingerprint.get("key"), "fingerprint_label": s.fingerprint.get("label"),
            "latest": {"sha": last.sha, "time": iso(last.time), "value": last.value, "ci_low": last.ci_low,
                       "ci_high": last.ci_high},
            "points": len(s.points) if point_counts is None
            else point_counts[(s.benchmark, s.fingerprint.get("key"))],
            "latest_change": None if cp is None else {"sha": cp.sha, "commit_range": cp.commit_range,
                                                      "ratio": cp.ratio, "time": iso(cp.time)},
        })
    for s in series if change_series is None else change_series:
        for c in s.change_points:
            recent_cps.append({"benchmark": s.benchmark, "fingerprint_label": s.fingerprint.get("label"),
                               "sha": c.sha, "commit_range": c.commit_range, "before": c.before,
                               "after": c.after, "ratio": c.ratio, "time": iso(c.time), "prs": list(c.prs),
                               "status": status_of.get((s.benchmark, s.fingerprint.get("key"), c.sha),
                                                       "improvement" if c.ratio < 1 else "open")})
    for p in side_points:  # oldest first, so the newest PR point wins
        if p.kind == "pr" and p.benchmark in by_name:
            by_name[p.benchmark]["latest_pr"] = {"number": p.pr_number, "url": p.pr_url, "sha": p.sha,
                                                 "ratio": p.ratio, "verdict": p.verdict, "value": p.value,
                                                 "time": iso(p.time)}
    recent_cps.sort(key=lambda c: c["time"] or "", reverse=True)
    return {"benchmarks": [by_name[k] for k in sorted(by_name)], "recent_change_points": recent_cps[:recent],
            "alert_accuracy": alert_accuracy(alerts)}


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
