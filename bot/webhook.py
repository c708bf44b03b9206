"""The App's HTTP surface (Flask blueprint): ``POST /webhook``, ``/`` and the run pages.

``POST /webhook`` answers within milliseconds and makes no GitHub call:

1. verify ``X-Hub-Signature-256`` over the raw body (401 otherwise; nothing parsed before);
2. parse (400 on a malformed delivery); events/actions perfgate does not act on → 204;
3. record the delivery, de-duplicated by ``X-GitHub-Delivery`` (a repeat → 200 ``duplicate``);
4. enqueue ``process_delivery`` (Huey) → 202.

It never answers 500: an unexpected failure while recording is a 503 (GitHub shows it as
failed; redeliver once the database is back). ``GET /`` lists recent runs; ``GET /runs/<key>``
is a run's page (the check run's ``details_url``) with the full report; ``GET /api/runs/<key>``
the same as JSON. Each shows a repository's data only to those who may read it (``bot.access``).

:func:`register` adds all of it to the app made by ``bot.create_app``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Mapping

from flask import Blueprint, Flask, abort, current_app, jsonify, render_template, request

from . import access, app_store, decide
from .app_settings import has_github_settings, load_app_settings
from .webhooks import WebhookError, parse_event

log = logging.getLogger("perfgate.bot")

#: GitHub caps payloads at 25 MB (GITHUB.md); a little room for headers.
MAX_BODY = 26 * 1024 * 1024

#: ``GithubIntegration`` options under ``TESTING``: no retries, no pacing sleeps (GITHUB.md).
TESTING_CLIENT_OPTIONS = {"retry": None, "seconds_between_requests": 0, "seconds_between_writes": 0, "timeout": 10}

intake = Blueprint("app_webhook", __name__)
pages = Blueprint("app_pages", __name__, template_folder="templates")


def register(app: Flask, source: Mapping[str, str] | None = None, *, client_options: dict | None = None) -> None:
    """Add the webhook intake, the job queue and the App's pages to ``app`` (idempotent).

    Args:
        app: from ``bot.create_app`` (its ``extensions["perfgate"]["db"]`` is used).
        source: settings by variable name (``bot.app_settings``); None reads ``os.environ``.
            Without any GitHub setting the pages work and ``/webhook`` answers 503.
        client_options: extra ``GithubIntegration`` keyword arguments; default: none, or
            :data:`TESTING_CLIENT_OPTIONS` when ``TESTING`` is set in ``source``.
    Raises:
        runner.errors.UserError: some GitHub settings are given but one is missing or malformed.
    """
    if "app_webhook" in app.blueprints:
        return
    source = dict(os.environ) if source is None else dict(source)
    state: dict[str, Any] = {"settings": None, "queue": None, "runtime": None}
    if has_github_settings(source):
        from .db import default_home
        from .executor import Runtime
        from .gateway import Gateway
        from .queue import build_queue, make_huey

        settings = load_app_settings(source)
        if client_options is None and str(source.get("TESTING", "")).lower() in ("1", "true", "yes"):
            client_options = TESTING_CLIENT_OPTIONS
        gateway = Gateway(settings.app_id, settings.private_key, settings.api_url, client_options)
        runtime = Runtime(db=app.extensions["perfgate"]["db"], settings=settings, client_for=gateway.installation)
        state.update(settings=settings, runtime=runtime, gateway=gateway,
                     queue=build_queue(make_huey(settings.queue_url, default_home(source)), lambda: runtime))
    else:
        log.warning("no GitHub App settings (GITHUB_APP_ID, ...): /webhook answers 503")
    app.extensions["perfgate_app"] = state
    if app.config.get("MAX_CONTENT_LENGTH") is None:
        app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.register_blueprint(intake)
    app.register_blueprint(pages)


def _state() -> dict:
    return current_app.extensions["perfgate_app"]


def _db():
    return current_app.extensions["perfgate"]["db"]


@intake.post("/webhook")
def webhook():
    state = _state()
    if state["settings"] is None:
        return jsonify(error="the GitHub App is not configured on this server"), 503
    body = request.get_data(cache=False)
    try:
        event = parse_event(request.headers, body, state["settings"].webhook_secret)
    except WebhookError as exc:
        return jsonify(error=str(exc)), exc.status
    if not decide.handled(event.name, event.action):
        return "", 204
    try:
        with _db().session() as session, session.begin():
            row = app_store.record_delivery(session, event)
    except Exception:  # noqa: BLE001 - the database is down: tell GitHub, do not crash
        log.exception("could not record delivery %s", event.delivery_id)
        return jsonify(error="could not record the delivery; redeliver later"), 503
    if row is None:
        return jsonify(status="duplicate", delivery=event.delivery_id), 200
    try:
        state["queue"].enqueue_delivery(event.delivery_id)
    except Exception:  # noqa: BLE001 - the delivery is stored (status queued); the job failed or the queue is down
        log.exception("job for delivery %s failed or could not be queued", event.delivery_id)
    return jsonify(status="queued", delivery=event.delivery_id), 202


@pages.get("/")
def index():
    with _db().session() as session:
        installations = app_store.installations(session)
        runs = app_store.recent_runs(session)
    readable = {name: access.allowed(name) for name in {r.repository for r in runs}}
    # Which accounts installed the App is theirs to tell: listed only where everything is open.
    shown = installations if current_app.extensions["perfgate"]["settings"].read_access == "all" else []
    return render_template("app/index.html", installations=shown, runs=[r for r in runs if readable[r.repository]],
                           viewer=access.viewer(), oauth=current_app.extensions["perfgate"]["settings"].oauth)


def _run_json(run) -> dict:
    return {"key": run.key, "repository": run.repository, "pr_number": run.pr_number, "kind": run.kind,
            "trigger": run.trigger, "requested_by": run.requested_by, "base_sha": run.base_sha,
            "head_sha": run.head_sha, "filter": run.filter, "status": run.status, "conclusion": run.conclusion,
            "headline": run.headline, "workflow_run_url": run.workflow_run_url,
            "created_at": run.created_at.isoformat(), "result_id": run.result_id}


@pages.get("/runs/<key>")
def run_page(key: str):
    from runner import report

    from .models import Result

    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        access.require(run.repository)
        doc = session.get(Result, run.result_id).document if run.result_id else None
    if doc is None:
        return render_template("app/run.html", run=run)
    html = report.render(doc, "html")
    banner = render_template("app/run.html", run=run).split("<body>", 1)[1].split("</body>", 1)[0]
    banner = banner.replace("<p>The full report appears here once the run has reported back.</p>", "")
    at = html.find(">", html.find("<body")) + 1 if "<body" in html else 0
    return html[:at] + f'<div class="perfgate-run">{banner}</div>' + html[at:]


@pages.get("/api/runs/<key>")
def run_api(key: str):
    with _db().session() as session:
        run = app_store.get_run(session, key)
        if run is None:
            abort(404)
        access.require(run.repository, page=False)
        return jsonify(_run_json(run))
