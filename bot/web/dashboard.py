"""Dashboard pages and JSON API of the regression history (Flask blueprints).

Pages (HTML, server-side SVG charts, no scripts, nothing loaded from the network):

- ``GET /<owner>/<repo>``: benchmarks (latest value, latest change point), a page at a time,
  recent change points with their outcome, alert accuracy.
- ``GET /<owner>/<repo>/bench/<name>``: the time-series chart of one benchmark, its PR points a
  page at a time.

JSON (``/api``), the same data:

- ``GET /api/<owner>/<repo>``: ``bot.history.texts.repository_overview`` (a page of benchmarks).
- ``GET /api/<owner>/<repo>/series``: ``{series: [...]}`` of a page of benchmarks
  (``bot.history.texts.series_json(detailed=True)``).
- ``GET /api/<owner>/<repo>/bench/<name>``: ``{repository, benchmark, measure, series, pr_points,
  fingerprint_changes}`` (a page of PR points, newest first); ``?measure=memory`` gives the peak
  memory series (bytes) instead of the time series, ``?measure=compile`` the first call's compile time.
- ``GET /api/<owner>/<repo>/alerts``: ``{alerts, alert_accuracy}`` (a page of alerts; the accuracy
  counts all).

Lists come a page at a time (``?page=&limit=``, ``bot.web.paging``); JSON answers add ``page``,
``limit``, ``next`` and ``previous`` (URLs, null at either end). No view reads a stored
results document.

Views are thin: read with ``bot.history.reads``, shape with
``bot.history.series``/``texts``/``chart``. Every view first checks that the viewer may read the
repository (``bot.web.signin``; 404 otherwise).
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, render_template, request

from runner.report.units import fmt_change, fmt_time

from ..history import chart, texts
from ..history import reads as history_reads
from ..history.points import MEASURES, is_repository_name, iso
from ..history.series import (Point, alert_accuracy, classify_alerts, fingerprint_changes,
                              historical_noise)
from . import paging, signin

pages = Blueprint("history_pages", __name__, template_folder="templates")
api = Blueprint("history_api", __name__, url_prefix="/api")


def _perfgate() -> dict:
    return current_app.extensions["perfgate"]


def _repository(owner: str, repo: str, *, page: bool = True) -> str:
    """``owner/name``, after checking the viewer may read it (``bot.web.signin``; 404 otherwise)."""
    name = f"{owner}/{repo}"
    if not is_repository_name(name):
        abort(404)
    signin.require(name, page=page)
    return name


def _overview(session, name: str, page: paging.Page) -> tuple[dict, bool]:
    """One page of the repository's benchmarks (names read a page at a time in SQL; of their
    series and PRs only the newest point and the count), with alerts and recent change points
    from the cached change points of every series (no points, no documents).
    → (overview, another page follows?)"""
    names, more = page.cut(history_reads.benchmark_names(session, name, offset=page.offset,
                                                         limit=page.limit + 1))
    series, counts = history_reads.latest_of_series(session, name, names)
    side = history_reads.latest_pr_points(session, name, names)
    changes = history_reads.load_change_points(session, name)
    alerts = classify_alerts(changes, history_reads.accepts_of(session, name))
    return texts.repository_overview(series, side, alerts, change_series=changes,
                                     point_counts=counts), more


def _bench_data(session, name: str, bench: str, page: paging.Page,
                measure: str = "time") -> tuple[list, list, list, bool]:
    """The benchmark's series of ``measure`` (whole: the chart draws them) and one page of its PR
    points, newest first (read in SQL). → (series, PR points oldest first, fingerprint changes, more?)"""
    series = history_reads.load_series(session, name, bench, measure=measure)
    side, more = page.cut(history_reads.load_side_points(session, name, bench, limit=page.limit + 1,
                                                         offset=page.offset, measure=measure)[::-1])
    changes = fingerprint_changes([p for s in series for p in s.points])
    return series, side[::-1], changes, more


def _point_json(p: Point) -> dict:
    return {"sha": p.sha, "time": iso(p.time), "value": p.value, "ci_low": p.ci_low,
            "ci_high": p.ci_high, "kind": p.kind, "pr_number": p.pr_number, "pr_url": p.pr_url,
            "ratio": p.ratio,
            "verdict": p.verdict, "fingerprint": p.fingerprint}


@pages.get("/<owner>/<repo>")
def repository_page(owner: str, repo: str):
    name = _repository(owner, repo)
    page = paging.requested(api=False)
    with _perfgate()["db"].session() as session:
        if history_reads.get_repository(session, name) is None:
            abort(404)
        overview, more = _overview(session, name, page)
        results = history_reads.result_count(session, name)
    return render_template("history/repository.html", repository=name, overview=overview, results=results,
                           pages=paging.links(page, more), fmt_s=fmt_time, fmt_ratio=fmt_change,
                           bench_url=lambda b: texts.bench_url(None, name, b))


@pages.get("/<owner>/<repo>/bench/<path:bench>")
def bench_page(owner: str, repo: str, bench: str):
    name = _repository(owner, repo)
    page = paging.requested(api=False)
    with _perfgate()["db"].session() as session:
        series, side, changes, more = _bench_data(session, name, bench, page)
        memory = _bench_data(session, name, bench, paging.Page(1, page.limit), "memory")  # its latest PR points
    if not series and not side and not memory[0] and not memory[1] and page.number == 1:
        abort(404)
    shapes = chart.bench_chart(series, side, changes)
    memory_shapes = chart.bench_chart(memory[0], memory[1], memory[2], measure="memory")
    return render_template("history/bench.html", repository=name, benchmark=bench, series=series, side=side,
                           chart=shapes, memory_chart=memory_shapes, fingerprint_changes=changes, fmt_s=fmt_time,
                           fmt_ratio=fmt_change, iso=iso, pages=paging.links(page, more),
                           noise={s.fingerprint.get("key"): historical_noise(
                               s.values, [c.index for c in s.change_points])[0] for s in series})


@api.get("/<owner>/<repo>")
def repository_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    page = paging.requested(api=True)
    with _perfgate()["db"].session() as session:
        if history_reads.get_repository(session, name) is None:
            return jsonify(error=f"no history for {name}"), 404
        overview, more = _overview(session, name, page)
    return jsonify(repository=name, **overview, **paging.links(page, more))


@api.get("/<owner>/<repo>/series")
def series_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    page = paging.requested(api=True)
    with _perfgate()["db"].session() as session:
        names, more = page.cut(history_reads.benchmark_names(session, name, offset=page.offset,
                                                             limit=page.limit + 1))
        series = history_reads.load_series(session, name, benchmarks=names) if names else []
    return jsonify(repository=name, series=[texts.series_json(s, detailed=True) for s in series],
                   **paging.links(page, more))


@api.get("/<owner>/<repo>/bench/<path:bench>")
def bench_json(owner: str, repo: str, bench: str):
    name = _repository(owner, repo, page=False)
    page = paging.requested(api=True)
    measure = request.args.get("measure", "time")
    if measure not in MEASURES:
        return jsonify(error=f"measure must be one of {', '.join(MEASURES)}"), 400
    with _perfgate()["db"].session() as session:
        series, side, changes, more = _bench_data(session, name, bench, page, measure)
    if not series and not side and page.number == 1:
        return jsonify(error=f"no history for {bench} in {name}"), 404
    return jsonify(repository=name, benchmark=bench, measure=measure,
                   series=[texts.series_json(s, detailed=True) for s in series],
                   pr_points=[_point_json(p) for p in side],
                   fingerprint_changes=[{**c, "time": iso(c["time"])} for c in changes],
                   **paging.links(page, more))


@api.get("/<owner>/<repo>/alerts")
def alerts_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    page = paging.requested(api=True)
    with _perfgate()["db"].session() as session:
        changes = history_reads.load_change_points(session, name)
        alerts = classify_alerts(changes, history_reads.accepts_of(session, name))
    shown, more = page.slice(alerts)
    return jsonify(repository=name, alerts=shown, alert_accuracy=alert_accuracy(alerts),
                   **paging.links(page, more))
