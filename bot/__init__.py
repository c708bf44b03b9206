"""perfgate's GitHub App: Flask application factory, storage, regression history, dashboard.

``create_app()`` is the WSGI entry (``gunicorn "bot:create_app()"``). Importing this package
imports neither Flask nor torch; ``create_app`` imports Flask.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from .settings import Settings

log = logging.getLogger("perfgate.bot")


def create_app(config: "Mapping[str, str] | Settings | None" = None):
    """Build the Flask application: the one place the web process is composed.

    Args:
        config: the settings (``bot.settings.Settings``), or settings by environment-variable
            name (``bot.settings``); None reads ``os.environ``. Read once, here.
    Returns:
        a ``flask.Flask`` whose database has been upgraded to the newest migration.
        ``app.extensions["perfgate"]`` holds ``{"settings": Settings, "db": Database,
        "queue": JobQueue | None, "runtime": Runtime | None}`` (:func:`_work_intake`).
    Raises:
        runner.errors.UserError: a setting is malformed, the App's id and key are given without
            the webhook secret, ``HUEY_URL=memory://`` without the App's key (its jobs would run
            here), or the database cannot be opened.
    """
    from flask import Flask

    from .db import open_database
    from .settings import Settings, load_settings
    from .web import intake

    if isinstance(config, Settings):
        settings = config
    else:
        settings = load_settings(dict(os.environ) if config is None else dict(config))
    app = Flask(__name__)
    app.config["TESTING"] = settings.testing
    app.config["MAX_CONTENT_LENGTH"] = intake.MAX_BODY
    _harden(app, settings.github_url)
    if settings.has_app:
        settings.require_intake()
    database = open_database(settings.database_url)
    queue, runtime = _work_intake(settings, database)
    app.extensions["perfgate"] = {"settings": settings, "db": database, "queue": queue,
                                  "runtime": runtime}
    _routes(app, database)
    return app


def _work_intake(settings: "Settings", database) -> tuple:
    """``(queue, runtime)``: with the webhook secret, the job queue ``/webhook`` fills
    (``bot.app.runtime.build_intake``); with the App's id and key too, the App's runtime
    (``bot.app.runtime.build_runtime``, the queue is its ``runtime.queue``). Without the webhook
    secret ``(None, None)``: the pages work and ``/webhook`` answers 503. A production web process
    gets the webhook secret and not the App's key (security review N8): it never calls GitHub,
    the worker does."""
    if not settings.has_intake:
        log.warning("no webhook secret (GITHUB_WEBHOOK_SECRET): /webhook answers 503")
        return None, None
    from .app.queue import queue_warning
    from .app.runtime import build_intake, build_runtime

    runtime = None
    if settings.has_app:
        runtime = build_runtime(settings, database)
        queue = runtime.queue
    else:
        queue = build_intake(settings)
    warning = queue_warning(settings.queue_url)
    if warning:
        log.warning("%s: whoever reaches it can queue work for the worker", warning)
    if not settings.testing:  # compile the webhook validators before the server takes a delivery
        from .app.core import payloads

        payloads.warm_up()
    return queue, runtime


def _routes(app, database) -> None:
    """Sign-in, the pages' blueprints (dashboard and its JSON API, the webhook intake, runs) and
    ``/healthz`` (503 while the database is unreachable)."""
    from flask import jsonify

    from .web import dashboard, intake, runs, signin

    signin.init_app(app)
    app.register_blueprint(dashboard.pages)
    app.register_blueprint(dashboard.api)
    app.register_blueprint(intake.intake)
    app.register_blueprint(runs.pages)

    @app.get("/healthz")
    def healthz():
        if not database.reachable():
            return jsonify(status="error", database="unreachable"), 503
        return jsonify(status="ok", database="ok")


#: Every page is server-rendered HTML and inline SVG with inline styles; no script, font,
#: frame or form, and nothing from another origin.
CONTENT_SECURITY_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _harden(app, github_url: str) -> None:
    """Headers on every response (:data:`CONTENT_SECURITY_POLICY`, no MIME sniffing, no
    referrer); for the templates: the ``github_link`` filter (a URL from stored data or a
    payload is a link only when it is ``https://`` under ``github_url``), the ``github_url``
    global, and output that is always encodable (``runner.report.escape.encodable``)."""
    from runner.report.escape import encodable, safe_link

    app.jinja_env.finalize = encodable  # a stored lone surrogate must not make a page unencodable
    app.jinja_env.filters["github_link"] = lambda url: safe_link(url, github_url)
    app.jinja_env.globals["github_url"] = github_url

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response
