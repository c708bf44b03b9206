"""The App's job queue (Huey): the webhook view enqueues, ``perfgate worker`` consumes.

Backends (``HUEY_URL`` / ``REDIS_URL``):

- unset: ``SqliteHuey`` on ``$PERFGATE_HOME/huey.db`` (one machine, nothing to install);
- ``sqlite:///PATH``: ``SqliteHuey`` on PATH;
- ``redis://...`` / ``rediss://...``: ``RedisHuey`` (several machines; needs the ``redis``
  package);
- ``memory://``: in-process and *immediate* (jobs run inside ``enqueue``): tests only.

Tasks are registered per queue (no module-level Huey): ``process_delivery(delivery_id)``
(retried twice, 30 s apart; run again after :data:`BUSY_DELAY` when another job of the same PR
holds its lease), ``expire_runs`` every 5 minutes and ``sweep_deliveries`` every 10
(deliveries whose work was lost — failed, or queued for 15 minutes — are processed again;
``bot.app.executor.lost_deliveries``), ``forget_deliveries`` once a day (retention:
``PERFGATE_DELIVERY_RETENTION``). The runtime they need
(database, GitHub gateway) is built lazily, once per process, by ``runtime_factory``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from runner.errors import UserError

from ..db import SQLITE_BUSY_TIMEOUT, private_file

log = logging.getLogger("perfgate.bot")

#: Job retries and the pause between them (seconds): GitHub hiccups are usually short.
RETRIES, RETRY_DELAY = 2, 30

#: Seconds before a job that found its PR busy (``bot.app.executor.Busy``) runs again; it does
#: not count as a retry.
BUSY_DELAY = 2


@dataclass
class JobQueue:
    huey: Any
    process_delivery: Any
    expire_runs: Any
    sweep_deliveries: Any = None
    runtime: Callable[[], Any] | None = None

    def enqueue_delivery(self, delivery_id: str) -> None:
        """Queue the job of one stored delivery (runs at once in immediate mode)."""
        self.process_delivery(delivery_id)


def make_huey(queue_url: str | None, home: Path, name: str = "perfgate"):
    """A Huey instance for ``queue_url`` (see the module docstring).

    Raises:
        UserError: Redis is asked for but the ``redis`` package is missing.
    """
    from huey import MemoryHuey, SqliteHuey

    if queue_url and queue_url.startswith("memory://"):
        return MemoryHuey(name, immediate=True)
    if queue_url and queue_url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from huey import RedisHuey

            return RedisHuey(name, url=queue_url)
        except ImportError:
            raise UserError("HUEY_URL/REDIS_URL is a Redis URL but the Python package 'redis' is not installed "
                            "(pip install redis)") from None
    path = private_file((Path(queue_url[len("sqlite:///"):]) if queue_url else home / "huey.db").expanduser())
    return SqliteHuey(name, filename=str(path), timeout=SQLITE_BUSY_TIMEOUT)


def build_queue(huey, runtime_factory: Callable[[], Any]) -> JobQueue:
    """Register the App's tasks on ``huey``; ``runtime_factory()`` → ``bot.app.executor.Runtime``."""
    from huey import crontab

    from . import executor

    cache: dict[str, Any] = {}

    def runtime():
        if "rt" not in cache:
            cache["rt"] = runtime_factory()
        return cache["rt"]

    @huey.task(retries=RETRIES, retry_delay=RETRY_DELAY, name="perfgate.process_delivery")
    def process_delivery(delivery_id: str) -> int:
        try:
            return len(executor.handle_delivery(runtime(), delivery_id))
        except executor.Busy:  # another job of the same PR runs: this one goes after it
            process_delivery.schedule((delivery_id,), delay=BUSY_DELAY)
            return 0

    @huey.periodic_task(crontab(minute="*/5"), name="perfgate.expire_runs")
    def expire_runs() -> int:
        return len(executor.expire_runs(runtime()))

    @huey.periodic_task(crontab(minute="*/10"), name="perfgate.sweep_deliveries")
    def sweep_deliveries() -> int:
        lost = executor.lost_deliveries(runtime())
        for delivery_id in lost:
            process_delivery(delivery_id)
        return len(lost)

    @huey.periodic_task(crontab(minute="17", hour="3"), name="perfgate.forget_deliveries")
    def forget_deliveries() -> int:
        return executor.forget_deliveries(runtime())

    return JobQueue(huey, process_delivery, expire_runs, sweep_deliveries, runtime)
