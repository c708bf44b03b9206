"""The App's pages (Flask blueprint): ``GET /`` lists runs, newest first, a page at a time
(``?page=&limit=``, ``bot.web.paging``); ``GET /runs/<key>`` is a run's page (the check run's
``details_url``) with the full report (rendered once per process and result:
:class:`RenderedReports`); ``GET /api/runs/<key>`` the run as JSON. Each shows a repository's
data only to those who may read it (``bot.web.signin``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from flask import Blueprint, abort, current_app, jsonify, render_template
from markupsafe import Markup

from ..app.store import store as app_store
from ..history import reads as history_reads
from . import paging, signin

pages = Blueprint("app_pages", __name__)


def _db():
    return current_app.extensions["perfgate"]["db"]


@pages.get("/")
def index():
    page = paging.requested(api=False)
    with _db().session() as session:
        installations = app_store.installations(session)
        runs, more = page.cut(app_store.recent_runs(session, offset=page.offset, limit=page.limit + 1))
        stored = history_reads.list_repositories(session)
    settings = current_app.extensions["perfgate"]["settings"]
    readable = {name: signin.allowed(name) for name in {r.repository for r in runs} | set(stored)}
    # Which accounts installed the App is theirs to tell: listed only where everything is open.
    shown = installations if settings.read_access == "all" else []
    return render_template("app/index.html", installations=shown, runs=[r for r in runs if readable[r.repository]],
                           pages=paging.links(page, more), viewer=signin.viewer(),
                           oauth=settings.oauth,
                           repositories=[name for name in stored if readable[name]],
                           read_access=settings.read_access, has_app=settings.has_app,
                           setup="app_setup" in current_app.blueprints)


def _run_json(run) -> dict:
    return {"key": run.key, "repository": run.repository, "pr_number": run.pr_number, "kind": run.kind,
            "trigger": run.trigger, "requested_by": run.requested_by, "base_sha": run.base_sha,
            "head_sha": run.head_sha, "filter": run.filter, "status": run.status, "conclusion": run.conclusion,
            "headline": run.headline, "workflow_run_url": run.workflow_run_url,
            "created_at": run.created_at.isoformat(), "result_id": run.result_id}


class RenderedReports:
    """The HTML reports of one database's stored results by result id (one per app), the least
    recently used dropped beyond ``max_chars``. A stored document never changes, so a report
    is rendered once per process, whatever its size, and its document not read again. The
    run's banner, which does change, goes in at :data:`BANNER` on each request."""

    #: Where the banner goes: an HTML comment, which no escaped text of a document can contain.
    BANNER = Markup("<!-- perfgate:run-banner -->")

    def __init__(self, max_chars: int = 64 * 1024 * 1024) -> None:
        self.max_chars = max_chars
        self._pages: OrderedDict[int, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, result_id: int, render: Callable[[], str]) -> str:
        """The report of ``result_id``, from ``render()`` when not kept."""
        with self._lock:
            page = self._pages.get(result_id)
            if page is not None:
                self._pages.move_to_end(result_id)
                return page
        page = render()
        with self._lock:
            self._pages[result_id] = page
            while sum(map(len, self._pages.values())) > self.max_chars and len(self._pages) > 1:
                self._pages.popitem(last=False)
        return page


@pages.get("/runs/<key>")
def run_page(key: str):
    from runner import report

    from ..history.tables import Result

    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        signin.require(run.repository)
        if run.result_id is None:
            return render_template("app/run.html", run=run)
        reports = current_app.extensions["perfgate"].setdefault("reports", RenderedReports())
        page = reports.get(run.result_id, lambda: report.render(
            session.get(Result, run.result_id).document, "html", banner=RenderedReports.BANNER))
    return page.replace(RenderedReports.BANNER, Markup(render_template("app/run_banner.html", run=run)), 1)


@pages.get("/api/runs/<key>")
def run_api(key: str):
    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        signin.require(run.repository, page=False)
        return jsonify(_run_json(run))
