"""perfgate's GitHub App: Flask application factory, storage, regression history, dashboard.

``create_app()`` is the WSGI entry (``gunicorn "bot:create_app()"``). Importing this package
imports neither Flask nor torch; ``create_app`` imports Flask.
"""

from __future__ import annotations

import os
from typing import Mapping


def create_app(config: Mapping[str, str] | None = None):
    """Build the Flask application.

    Args:
        config: settings by environment-variable name (``DATABASE_URL``,
            ``PERFGATE_HOME``, ``PERFGATE_PUBLIC_URL``, ``TESTING``, and the GitHub App's, see
            ``bot.app_settings``); None reads ``os.environ``. Read once, here.
    Returns:
        a ``flask.Flask`` whose database has been upgraded to the newest migration.
        ``app.extensions["perfgate"]`` holds ``{"settings": Settings, "db": Database}``.
    Raises:
        runner.errors.UserError: a setting is malformed or the database cannot be opened.
    """
    from flask import Flask, jsonify
    from sqlalchemy import text

    from . import access, dashboard, webhook
    from .config import load_settings
    from .db import open_database

    settings = load_settings(dict(os.environ) if config is None else dict(config))
    app = Flask(__name__)
    app.config["TESTING"] = settings.testing
    database = open_database(settings.database_url)
    app.extensions["perfgate"] = {"settings": settings, "db": database}
    access.init_app(app)
    app.register_blueprint(dashboard.pages)
    app.register_blueprint(dashboard.api)
    webhook.register(app, dict(os.environ) if config is None else dict(config))  # the GitHub App (issue 6)

    @app.get("/healthz")
    def healthz():
        try:
            with database.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any database failure means unhealthy
            return jsonify(status="error", database="unreachable"), 503
        return jsonify(status="ok", database="ok")

    return app
