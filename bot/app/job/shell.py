"""What every module of the App's shell shares, below all of them: the :class:`Runtime` a job
runs with, the :class:`Step` being carried out (a context variable, for the effects that must not
happen twice), the retry budget (:data:`RETRIES`, :data:`GIVE_UP_AFTER`), :class:`Busy` and the
App's logger. It decides nothing; the job (``bot.app.job.executor``), the effects, the sweeps and
the queue import it, and it imports none of them.
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from runner.report.escape import safe_link

from ..core.facts import run_page
from ..github.memo import Memo

if TYPE_CHECKING:  # types only: this module stays below the gateway, the database and the settings
    from ...db import Database
    from ...settings import Settings
    from ..github.gateway import InstallationClient

log = logging.getLogger("perfgate.bot")

#: Job retries and the pause between them (seconds): GitHub hiccups are usually short.
RETRIES, RETRY_DELAY = 2, 30

#: Attempts of a delivery's job before a transient GitHub error (no answer, 5xx, rate limit) on
#: a run's dispatch or results is reported on the check run instead of retried: three rounds
#: of Huey's retries (the job's own and two sweeps', 20 minutes or more).
GIVE_UP_AFTER = 3 * (RETRIES + 1)

#: Seconds a queue message is taken after it was written (``bot.app.queue``), and its run is
#: remembered (``bot.app.job.executor``: a replay within them runs nothing).
MESSAGE_VALID = 2 * 86400


@dataclass
class Runtime:
    """What a job needs: the database, the App's settings and a way to act as an installation;
    ``queue``: the job queue (``bot.app.queue.JobQueue``) once ``bot.app.runtime.build_runtime``
    has made it; ``memo``: the answers of GitHub that ``client_for``'s clients keep
    (``bot.app.github.memo``)."""

    db: "Database"
    settings: "Settings"
    client_for: Callable[[int], "InstallationClient"]
    queue: Any = None
    memo: Memo = field(default_factory=Memo)  # GitHub's answers its clients reuse a while

    def details_url(self, key: str) -> str | None:
        """The run page (check run ``details_url``); None without ``PERFGATE_PUBLIC_URL``."""
        return run_page(self.settings.public_url, key)

    def github_link(self, url: str | None) -> str | None:
        """``url`` if it is an ``https://`` page of the configured GitHub host, else None
        (payload and stored URLs are written into comments only through here)."""
        return safe_link(url, self.settings.github_url)


class Busy(Exception):
    """Another job holds the lease of this job's PR (``name``); run this one again shortly."""


@dataclass(frozen=True)
class Step:
    """Which action of which delivery is being carried out; ``resume``: the job stopped at this
    action before (it may be partly done); ``attempt``: the job's attempt (1 = first)."""

    delivery_id: str
    index: int
    resume: bool = False
    attempt: int = 1

    @property
    def last_try(self) -> bool:
        """The job's last attempt (:data:`GIVE_UP_AFTER`): a transient GitHub error is reported
        now instead of retried."""
        return self.attempt >= GIVE_UP_AFTER


#: The step being carried out (None outside a delivery's job: the sweeps).
STEP: contextvars.ContextVar[Step | None] = contextvars.ContextVar("perfgate_step", default=None)


def resuming() -> bool:
    """Is the action being carried out one the job stopped at before (it may be partly done)?"""
    step = STEP.get()
    return bool(step and step.resume)


def last_try() -> bool:
    """Is this the job's last attempt (a transient error is reported, not retried)?"""
    step = STEP.get()
    return bool(step and step.last_try)
