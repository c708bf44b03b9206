"""A job's lease on its PR (``app_locks``): held while the job runs, renewed from a thread, so a
killed worker's lease runs out in :data:`LOCK_TTL` and the PR's next job goes on (shell)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import threading
import uuid
from typing import Iterator

from ...db import utc_now
from ..store import store as app_store
from .shell import Busy, Runtime, log

#: A job's lease on its PR, renewed every :data:`LOCK_RENEW` seconds while it runs: a killed
#: worker holds up the PR's next jobs for at most this long.
LOCK_TTL, LOCK_RENEW = _dt.timedelta(seconds=60), 20.0


@contextlib.contextmanager
def lease(rt: Runtime, name: str) -> Iterator[None]:
    """Hold the lease on ``name`` (``bot.app.store.store.acquire_lock``;
    ``bot.app.core.facts.lease_name``) while the block runs, renewing it from a thread every
    :data:`LOCK_RENEW` seconds.

    Raises:
        Busy: another holder's lease on ``name`` runs.
    """
    holder = uuid.uuid4().hex
    with rt.db.session() as session, session.begin():
        if not app_store.acquire_lock(session, name, holder, utc_now(), LOCK_TTL):
            raise Busy(name)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LOCK_RENEW):
            try:
                with rt.db.session() as session, session.begin():
                    if not app_store.acquire_lock(session, name, holder, utc_now(), LOCK_TTL):
                        log.warning("lease %s was taken over while its job still ran", name)
                        return
            except Exception:  # noqa: BLE001 - the database is away for a moment: try again
                log.warning("could not renew the lease %s", name, exc_info=True)

    thread = threading.Thread(target=renew, name=f"lease {name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with rt.db.session() as session, session.begin():
            app_store.release_lock(session, name, holder)
