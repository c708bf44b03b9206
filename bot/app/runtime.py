"""The composition root of the App's work, shared by the web process (``bot.create_app``) and
the worker (``perfgate worker``): settings + database → GitHub gateway → the shell's
``Runtime`` → the job queue with the App's tasks registered. A web process without the App's
key gets the queue alone (:func:`build_intake`): it only enqueues.
"""

from __future__ import annotations

from runner.errors import UserError

from ..db import Database
from ..settings import MissingSetting, Settings
from .job.shell import Runtime
from .github.gateway import Gateway
from .github.github_errors import TESTING_CLIENT_OPTIONS
from .github.memo import Memo, RememberingClient
from .queue import JobQueue, build_queue, make_huey


def build_intake(settings: Settings) -> JobQueue:
    """The job queue of a web process that holds the webhook secret but not the App's key: it
    enqueues deliveries for the worker and runs none (security review N8).

    Raises:
        runner.errors.UserError: ``HUEY_URL=memory://`` (its jobs would run in this process,
            which cannot call GitHub), or the queue backend cannot be made.
    """
    if settings.queue_url and settings.queue_url.startswith("memory://"):
        raise UserError("HUEY_URL=memory:// runs jobs inside the web process, which then needs GITHUB_APP_ID and "
                        "the App's key; give the web process a queue the worker reads (sqlite:/// or rediss://)")

    def no_runtime():
        raise MissingSetting("this process only queues deliveries (no GITHUB_APP_ID / key): `perfgate worker` runs them")

    huey = make_huey(settings.queue_url, settings.home, key=settings.queue_key)
    return build_queue(huey, no_runtime)


def build_runtime(settings: Settings, db: Database, *, client_options: dict | None = None) -> Runtime:
    """The App's runtime on ``db``, its job queue in ``runtime.queue`` (no thread started).

    Args:
        settings: with the GitHub App configured.
        client_options: extra ``GithubIntegration`` keyword arguments; default: none, or
            ``TESTING_CLIENT_OPTIONS`` when ``settings.testing``. Its ``timeout`` wins over
            ``settings.github_timeout`` (``PERFGATE_GITHUB_TIMEOUT``).
    Raises:
        bot.settings.MissingSetting: the GitHub App is not configured.
        runner.errors.UserError: the queue backend cannot be made (``bot.app.queue.make_huey``).
    """
    settings.require_app()
    if client_options is None and settings.testing:
        client_options = TESTING_CLIENT_OPTIONS
    gateway = Gateway(settings.app_id, settings.private_key, settings.api_url,
                      {"timeout": settings.github_timeout, **(client_options or {})})
    memo = Memo()

    def client_for(installation_id: int) -> RememberingClient:
        return RememberingClient(gateway.installation(installation_id), memo)

    runtime = Runtime(db=db, settings=settings, client_for=client_for, memo=memo)
    huey = make_huey(settings.queue_url, settings.home, key=settings.queue_key)
    runtime.queue = build_queue(huey, lambda: runtime)
    return runtime
