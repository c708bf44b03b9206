"""Dashboard pages and JSON API of the regression history (Flask blueprints).

Pages (HTML, server-side SVG charts, no scripts, nothing loaded from the network):

- ``GET /<owner>/<repo>``: benchmarks (latest value, latest change point), recent change
  points with their outcome, alert accuracy.
- ``GET /<owner>/<repo>/bench/<name>``: the time-series chart of one benchmark.

JSON (``/api``), the same data:

- ``GET /api/<owner>/<repo>``: ``bot.history.core.repository_overview``.
- ``GET /api/<owner>/<repo>/series``: ``{series: [...]}`` of every benchmark
  (``bot.history.core.series_json(detailed=True)``).
- ``GET /api/<owner>/<repo>/bench/<name>``: ``{repository, benchmark, series, pr_points,
  fingerprint_changes}``.
- ``GET /api/<owner>/<repo>/alerts``: ``{alerts, alert_accuracy}``.

Views are thin: read with ``bot.history.store``, shape with ``bot.history.core``/``bot.history.chart``. Every
view first checks that the viewer may read the repository (``bot.web.signin``; 404 otherwise).
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, render_template

from runner.report.units import fmt_change, fmt_time

from ..history import chart
from ..history import core as history
from ..history import store as history_store
from . import signin

pages = Blueprint("history_pages", __name__, template_folder="templates")
api = Blueprint("history_api", __name__, url_prefix="/api")


def _perfgate() -> dict:
    return current_app.extensions["perfgate"]


def _repository(owner: str, repo: str, *, page: bool = True) -> str:
    """``owner/name``, after checking the viewer may read it (``bot.web.signin``; 404 otherwise)."""
    name = f"{owner}/{repo}"
    if not history.is_repository_name(name):
        abort(404)
    signin.require(name, page=page)
    return name


def _overview(session, name: str) -> dict:
    series = history_store.load_series(session, name)
    side = history_store.load_side_points(session, name)
    alerts = history.classify_alerts(series, history_store.accepts_of(session, name))
    return history.repository_overview(series, side, alerts)


def _bench_data(session, name: str, bench: str) -> tuple[list, list, list]:
    series = history_store.load_series(session, name, bench)
    side = history_store.load_side_points(session, name, bench)
    changes = history.fingerprint_changes([p for s in series for p in s.points])
    return series, side, changes


def _point_json(p: history.Point) -> dict:
    return {"sha": p.sha, "time": history.iso(p.time), "value": p.value, "ci_low": p.ci_low, "ci_high": p.ci_high,
            "kind": p.kind, "pr_number": p.pr_number, "pr_url": p.pr_url, "ratio": p.ratio,
            "verdict": p.verdict, "fingerprint": p.fingerprint}


@pages.get("/<owner>/<repo>")
def repository_page(owner: str, repo: str):
    name = _repository(owner, repo)
    with _perfgate()["db"].session() as session:
        if history_store.get_repository(session, name) is None:
            abort(404)
        overview = _overview(session, name)
        results = history_store.result_count(session, name)
    return render_template("history/repository.html", repository=name, overview=overview, results=results,
                           fmt_s=fmt_time, fmt_ratio=fmt_change,
                           bench_url=lambda b: history.bench_url(None, name, b))


@pages.get("/<owner>/<repo>/bench/<path:bench>")
def bench_page(owner: str, repo: str, bench: str):
    name = _repository(owner, repo)
    with _perfgate()["db"].session() as session:
        series, side, changes = _bench_data(session, name, bench)
    if not series and not side:
        abort(404)
    shapes = chart.bench_chart(series, side, changes)
    return render_template("history/bench.html", repository=name, benchmark=bench, series=series, side=side,
                           chart=shapes, fingerprint_changes=changes, fmt_s=fmt_time,
                           fmt_ratio=fmt_change, iso=history.iso,
                           noise={s.fingerprint.get("key"): history.historical_noise(
                               s.values, [c.index for c in s.change_points])[0] for s in series})


@api.get("/<owner>/<repo>")
def repository_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    with _perfgate()["db"].session() as session:
        if history_store.get_repository(session, name) is None:
            return jsonify(error=f"no history for {name}"), 404
        return jsonify(repository=name, **_overview(session, name))


@api.get("/<owner>/<repo>/series")
def series_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    with _perfgate()["db"].session() as session:
        series = history_store.load_series(session, name)
    return jsonify(repository=name, series=[history.series_json(s, detailed=True) for s in series])


@api.get("/<owner>/<repo>/bench/<path:bench>")
def bench_json(owner: str, repo: str, bench: str):
    name = _repository(owner, repo, page=False)
    with _perfgate()["db"].session() as session:
        series, side, changes = _bench_data(session, name, bench)
    if not series and not side:
        return jsonify(error=f"no history for {bench} in {name}"), 404
    return jsonify(repository=name, benchmark=bench,
                   series=[history.series_json(s, detailed=True) for s in series],
                   pr_points=[_point_json(p) for p in side],
                   fingerprint_changes=[{**c, "time": history.iso(c["time"])} for c in changes])


@api.get("/<owner>/<repo>/alerts")
def alerts_json(owner: str, repo: str):
    name = _repository(owner, repo, page=False)
    with _perfgate()["db"].session() as session:
        series = history_store.load_series(session, name)
        alerts = history.classify_alerts(series, history_store.accepts_of(session, name))
    return jsonify(repository=name, alerts=alerts, alert_accuracy=history.alert_accuracy(alerts))
