"""The webhook intake (Flask blueprint): ``POST /webhook``.

``POST /webhook`` answers within milliseconds and makes no GitHub call:

1. verify ``X-Hub-Signature-256`` over the raw body (401 otherwise; nothing parsed before);
2. parse (400 on a malformed delivery); events/actions perfgate does not act on → 204;
3. record the delivery, de-duplicated by ``X-GitHub-Delivery`` (a repeat → 200 ``duplicate``);
4. enqueue ``process_delivery`` (Huey) → 202.

It never answers 500: an unexpected failure while recording is a 503 (GitHub shows it as
failed; redeliver once the database is back).

:func:`register` adds it, the job queue and the run pages (``bot.web.runs``) to the app made by
``bot.create_app``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Mapping

from flask import Blueprint, Flask, current_app, jsonify, request

from ..app import decide
from ..app import store as app_store
from ..app.events import WebhookError, parse_event
from ..app_settings import has_github_settings, load_app_settings
from . import runs

log = logging.getLogger("perfgate.bot")

#: GitHub caps payloads at 25 MB (GITHUB.md); a little room for headers.
MAX_BODY = 26 * 1024 * 1024

intake = Blueprint("app_webhook", __name__)


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
        from ..db import default_home
        from ..app.executor import Runtime
        from ..app.gateway import TESTING_CLIENT_OPTIONS, Gateway
        from ..app.queue import build_queue, make_huey

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
    app.register_blueprint(runs.pages)


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
