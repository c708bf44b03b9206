"""Regression history shown (pure): a series as JSON, the ``/perf history`` table, a
repository's overview (:mod:`bot.history` names the terms)."""

from __future__ import annotations

from typing import Mapping, Sequence

from runner.report.units import fmt_change, fmt_time

from .points import MEASURES, iso
from .series import Point, Series, alert_accuracy, within_noise

#: ``/perf history`` and the repo page show this many of the latest change points.
RECENT_CHANGE_POINTS = 5


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


def series_named(series: Sequence[Series], benchmark: str | None) -> list[Series]:
    """The series ``/perf history BENCH`` shows: ``benchmark``'s by exact name, else those whose
    name contains it; all of them when ``benchmark`` is None or empty."""
    if not benchmark:
        return list(series)
    return [s for s in series if s.benchmark == benchmark] or [s for s in series if benchmark in s.benchmark]


def regression_note(repository: str, benchmark: str, ratio: float | None, series: Series | None,
                    public_url: str | None) -> dict:
    """The PR comment's note on one regressed benchmark: ``{benchmark, url, ratio, within_noise,
    noise, pairs}`` — its history link and whether ``ratio`` is within the historical noise of
    ``series`` (its environment's; None: no history, ``within_noise`` None)."""
    return {"benchmark": benchmark, "url": bench_url(public_url, repository, benchmark), "ratio": ratio,
            **within_noise(ratio, series)}
