"""The App's pages (Flask blueprint): ``GET /`` lists runs, newest first, a page at a time
(``?page=&limit=``, ``bot.web.paging``), ``GET /runs/<key>`` is a
run's page (the check run's ``details_url``) with the full report, ``GET /api/runs/<key>`` the
same as JSON. Each shows a repository's data only to those who may read it (``bot.web.signin``).
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, render_template
from markupsafe import Markup

from ..app import listing
from ..app import store as app_store
from . import paging, signin

pages = Blueprint("app_pages", __name__)


def _db():
    return current_app.extensions["perfgate"]["db"]


@pages.get("/")
def index():
    page = paging.requested(api=False)
    with _db().session() as session:
        installations = app_store.installations(session)
        runs, more = page.cut(listing.runs_page(session, offset=page.offset, limit=page.limit + 1))
    readable = {name: signin.allowed(name) for name in {r.repository for r in runs}}
    # Which accounts installed the App is theirs to tell: listed only where everything is open.
    shown = installations if current_app.extensions["perfgate"]["settings"].read_access == "all" else []
    return render_template("app/index.html", installations=shown, runs=[r for r in runs if readable[r.repository]],
                           pages=paging.links(page, more), viewer=signin.viewer(),
                           oauth=current_app.extensions["perfgate"]["settings"].oauth)


def _run_json(run) -> dict:
    return {"key": run.key, "repository": run.repository, "pr_number": run.pr_number, "kind": run.kind,
            "trigger": run.trigger, "requested_by": run.requested_by, "base_sha": run.base_sha,
            "head_sha": run.head_sha, "filter": run.filter, "status": run.status, "conclusion": run.conclusion,
            "headline": run.headline, "workflow_run_url": run.workflow_run_url,
            "created_at": run.created_at.isoformat(), "result_id": run.result_id}


@pages.get("/runs/<key>")
def run_page(key: str):
    from runner import report

    from ..history.tables import Result

    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        signin.require(run.repository)
        doc = session.get(Result, run.result_id).document if run.result_id else None
    if doc is None:
        return render_template("app/run.html", run=run)
    return report.render(doc, "html", banner=Markup(render_template("app/run_banner.html", run=run)))


@pages.get("/api/runs/<key>")
def run_api(key: str):
    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        signin.require(run.repository, page=False)
        return jsonify(_run_json(run))
