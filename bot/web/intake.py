"""The webhook intake (Flask blueprint): ``POST /webhook``.

``POST /webhook`` answers within milliseconds and makes no GitHub call:

1. verify ``X-Hub-Signature-256`` over the raw body (401 otherwise; nothing parsed before);
2. parse (400 on a malformed delivery); events/actions perfgate does not act on → 204;
   a handled one whose payload breaks GitHub's published schema of that event and action
   (``bot.app.core.payloads``) → 400 naming the field, nothing stored; one whose payload alone
   shows that nothing would be done (``bot.app.core.handlers.relevant``: a comment that is not a
   ``/perf`` command) → 204, nothing stored;
3. record the delivery, de-duplicated by ``X-GitHub-Delivery`` (a repeat → 200 ``duplicate``,
   unless its work was lost — its job failed, or it has been queued for :data:`STALE_AFTER` —
   then GitHub's "Redeliver" queues it again: 202);
4. enqueue ``process_delivery`` (Huey) → 202.

It never answers 500: an unexpected failure while recording is a 503 (GitHub shows it as
failed; redeliver once the database is back).

The job queue is the one ``bot.create_app`` made (``bot.app.runtime.build_intake``: the web
process holds the webhook secret, not the App's key); without the webhook secret there is none
and ``/webhook`` answers 503.
"""

from __future__ import annotations

import datetime as _dt
import logging

from flask import Blueprint, current_app, jsonify, request

from ..app.core import handlers, payloads
from ..app.store import store as app_store
from ..app.core.events import WebhookError, parse_event
from ..db import utc_now

log = logging.getLogger("perfgate.bot")

#: A delivery queued for longer than this lost its job (a worker died, the queue was wiped).
STALE_AFTER = _dt.timedelta(minutes=15)

#: GitHub caps payloads at 25 MB (GITHUB.md); a little room for headers.
MAX_BODY = 26 * 1024 * 1024

intake = Blueprint("app_webhook", __name__)


def _queue():
    return current_app.extensions["perfgate"]["queue"]


def _db():
    return current_app.extensions["perfgate"]["db"]


@intake.post("/webhook")
def webhook():
    queue = _queue()
    if queue is None:
        return jsonify(error="the GitHub App is not configured on this server"), 503
    body = request.get_data(cache=False)
    try:
        event = parse_event(request.headers, body, current_app.extensions["perfgate"]["settings"].webhook_secret)
    except WebhookError as exc:
        return jsonify(error=str(exc)), exc.status
    if not handlers.handled(event.name, event.action):
        return "", 204
    try:
        payloads.validate(event.name, event.action, event.data)
    except payloads.PayloadError as exc:
        return jsonify(error=f"payload does not match GitHub's webhook schema: {exc}"), 400
    if not handlers.relevant(event):  # e.g. a comment that is not a /perf command: kept nowhere
        return "", 204
    try:
        with _db().session() as session, session.begin():
            stored = app_store.record_delivery(session, event)
            retry = not stored and app_store.retry_delivery(session, event.delivery_id, utc_now(), STALE_AFTER)
    except Exception:  # noqa: BLE001 - the database is down: tell GitHub, do not crash
        log.exception("could not record delivery %s", event.delivery_id)
        return jsonify(error="could not record the delivery; redeliver later"), 503
    if not stored and not retry:
        return jsonify(status="duplicate", delivery=event.delivery_id), 200
    try:
        queue.enqueue_delivery(event.delivery_id)
    except Exception:  # noqa: BLE001 - the delivery is stored (status queued); the job failed or the queue is down
        log.exception("job for delivery %s failed or could not be queued", event.delivery_id)
    return jsonify(status="queued", delivery=event.delivery_id), 202
