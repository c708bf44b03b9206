"""``perfgate serve``, ``perfgate worker`` and ``perfgate migrate`` (plugged into ``perfgate``
by ``bot.subcommands``).

``serve`` and ``worker`` read the App's settings from the environment once (``bot.settings``)
and stop with exit status 2 and one line naming the
missing or malformed setting. ``serve`` is Flask's development server; in production run
``gunicorn "bot:create_app()"`` (the Dockerfile does). ``worker`` is the Huey consumer that
does the GitHub work; the web process and the worker must see the same ``HUEY_URL`` (or the
same ``PERFGATE_HOME`` for the default SQLite queue).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Mapping

from runner.errors import UserError

#: Consumer threads of ``perfgate worker`` (``PERFGATE_WORKERS``). Jobs wait on GitHub, not the CPU.
DEFAULT_WORKERS = 2


def _logging() -> None:
    logging.basicConfig(level=os.environ.get("PERFGATE_LOG_LEVEL", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main_serve(args: argparse.Namespace) -> int:
    """Run the App (webhook, pages, dashboard) on ``args.host``:``args.port``.

    Raises:
        UserError: a setting is missing or malformed (exit 2).
    """
    from . import create_app
    from .settings import load_settings

    settings = load_settings(dict(os.environ))  # fail before anything starts, naming the setting
    if not settings.has_app and not settings.has_intake:
        return _serve_setup(args, settings)
    _logging()
    app = create_app(settings)
    app.run(host=args.host, port=args.port, threaded=True)
    return 0


def _serve_setup(args: argparse.Namespace, settings) -> int:
    """No App credentials at all: serve the pages and ``/setup`` (register the App from its
    manifest, :mod:`bot.web.setup`) until the user restarts with the credentials it stored.
    Prints the one-time setup link; only the browser that opens it may register the App.

    Without ``PERFGATE_PUBLIC_URL``, or with an ``http://`` loopback one (as the README allows
    for trying it locally), it serves the pages only and says how to register.

    Raises:
        UserError: ``PERFGATE_PUBLIC_URL`` is not an https address (the manifest's addresses come
            from it, never from a request).
    """
    from . import create_app
    from .settings import is_loopback_url
    from .web.setup import init_setup

    if not settings.public_url or is_loopback_url(settings.public_url):
        # Trying it on one's own machine: the pages and the history, no App to register (GitHub
        # delivers webhooks to a public https address only).
        _logging()
        app = create_app(settings)
        print(f"perfgate: serving the pages at http://{args.host}:{args.port}/ (no GitHub App: "
              "to register one, set PERFGATE_PUBLIC_URL to the https:// address where GitHub "
              "reaches this server)",
              file=sys.stderr, flush=True)
        app.run(host=args.host, port=args.port, threaded=True)
        return 0
    _logging()
    app = create_app(settings)
    token = init_setup(app, home=settings.home, public_url=settings.public_url, github_url=settings.github_url,
                       api_url=settings.api_url)
    print(f"perfgate: no GitHub App credentials (GITHUB_APP_ID, ...). To register the App, open once, in your "
          f"browser: {settings.public_url}/setup?token={token} (this link works once; restart for a new one)",
          file=sys.stderr, flush=True)
    app.run(host=args.host, port=args.port, threaded=True)
    return 0


def main_migrate(args: argparse.Namespace) -> int:
    """Upgrade the App's database (``DATABASE_URL``, else the SQLite file under
    ``PERFGATE_HOME``) to the newest schema, then exit: the one-time step that runs before the
    web and worker processes of a deployment start. Safe to repeat, and safe beside processes
    that are starting (``bot.db.upgrade`` takes a lock).

    Raises:
        UserError: the URL is malformed or the database cannot be reached (exit 2).
    """
    from .db import database_url, display_url, open_database

    url = database_url(os.environ)
    open_database(url).dispose()
    print(f"perfgate: the database {display_url(url)} is at the newest schema")
    return 0


def build_worker(env: Mapping[str, str], client_options: dict | None = None):
    """The consumer's job queue (``bot.app.queue.JobQueue``): the settings of ``env`` read once,
    composed by ``bot.app.runtime.build_runtime``; no thread started. ``client_options``: extra
    ``GithubIntegration`` arguments.

    Raises:
        UserError: a setting is missing or malformed, or HUEY_URL is ``memory://``.
    """
    from .app.runtime import build_runtime
    from .db import open_database
    from .settings import load_settings

    settings = load_settings(env).require_app()
    if settings.queue_url and settings.queue_url.startswith("memory://"):
        raise UserError("HUEY_URL=memory:// runs jobs inside the web process; the worker needs sqlite:///PATH or redis://")
    return build_runtime(settings, open_database(settings.database_url), client_options=client_options).queue


def main_sweep(args: argparse.Namespace) -> int:
    """Run the worker's periodic sweeps once, now: enqueue again the deliveries whose work was
    lost (failed, or ``queued`` for longer than ``--stale-after`` seconds: a killed worker, a
    wiped queue) for the running consumers, mark runs that never reported back as timed out, and
    set right what GitHub shows of runs that ended ``--reconcile-after`` seconds ago or more
    (``bot.app.job.sweeps.reconcile_ended``). Prints what it did.

    Raises:
        UserError: a setting is missing or malformed, ``--stale-after`` is not positive,
            ``--reconcile-after`` is not 0 to 30 days, or
            HUEY_URL is ``memory://`` (exit 2).
    """
    import datetime as _dt

    from .app.job import sweeps

    if not 0 < args.stale_after <= 30 * 86400:  # NaN and inf too
        raise UserError(f"--stale-after must be a positive number of seconds up to 30 days, got {args.stale_after:g}")
    reconcile_after = args.reconcile_after
    if reconcile_after is not None and not 0 <= reconcile_after <= 30 * 86400:  # NaN and inf too
        raise UserError(f"--reconcile-after must be 0 to 2592000 seconds (30 days), got {reconcile_after:g}")
    queue = build_worker(dict(os.environ))
    runtime = queue.runtime()
    lost = sweeps.lost_deliveries(runtime, stale_after=_dt.timedelta(seconds=args.stale_after))
    for delivery_id in lost:
        queue.enqueue_delivery(delivery_id)
    expired = sweeps.expire_runs(runtime)
    reconciled = sweeps.reconcile_ended(
        runtime, after=None if reconcile_after is None else _dt.timedelta(seconds=reconcile_after))
    print(f"perfgate: {len(lost)} lost deliveries queued again, {len(expired)} runs timed out, "
          f"{len(reconciled)} commits' check runs reconciled")
    return 0


def main_worker(args: argparse.Namespace) -> int:
    """Consume the App's jobs until interrupted (Ctrl-C / SIGTERM).

    Raises:
        UserError: a setting is missing or malformed (exit 2).
    """
    env = dict(os.environ)
    queue = build_worker(env)
    try:
        workers = int(env.get("PERFGATE_WORKERS") or DEFAULT_WORKERS)
    except ValueError:
        raise UserError(f"PERFGATE_WORKERS must be a whole number, got {env.get('PERFGATE_WORKERS')!r}") from None
    _logging()
    consumer = queue.huey.create_consumer(workers=max(1, workers), worker_type="thread", periodic=True)
    consumer.run()
    return 0
