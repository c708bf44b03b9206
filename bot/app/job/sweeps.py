"""The periodic work of the App's worker (shell): deliveries whose work was lost are queued again
(:func:`lost_deliveries`), old deliveries forgotten (:func:`forget_deliveries`), runs that never
reported back timed out or concluded (:func:`expire_runs`), and what GitHub shows that the runs' rows contradict set
right (:func:`reconcile_ended`: check runs left open although their run ended, duplicate
sticky comments). What happens to each run is the core's
decision (``bot.app.core.conclude``) on what the run records; the sweeps read, hold the PR's lease,
and carry out.
"""

from __future__ import annotations

import datetime as _dt

from ...db import utc_now
from ..core import conclude, messages
from . import runs
from ..store import store as app_store
from .effects import carry_out
from ..core.facts import RunInfo, lease_name
from ..github.github_errors import GitHubError
from .lease import lease
from .shell import Busy, Runtime, log

#: The sweep enqueues again deliveries whose work was lost: queued for longer than
#: ``SWEEP_STALE`` or failed, received within ``SWEEP_WITHIN`` (so a delivery that fails for
#: good is retried at most every sweep for that long, never forever).
SWEEP_STALE, SWEEP_WITHIN = _dt.timedelta(minutes=15), _dt.timedelta(hours=6)


def lost_deliveries(rt: Runtime, now=None, stale_after: _dt.timedelta = SWEEP_STALE) -> list[str]:
    """The deliveries to process again (``bot.app.store.store.lost_deliveries``: failed, or queued
    for longer than ``stale_after``), marked ``queued``."""
    now = now or utc_now()
    with rt.db.session() as session, session.begin():
        found = app_store.lost_deliveries(session, now, stale_after, SWEEP_WITHIN)
        for delivery_id in found:
            app_store.retry_delivery(session, delivery_id, now, stale_after)
    return found


def forget_deliveries(rt: Runtime, now=None) -> int:
    """Delete the deliveries received more than ``PERFGATE_DELIVERY_RETENTION`` ago whose work
    ended (``bot.app.store.store.delete_old_deliveries``), and the expired leases and records of
    queue messages run (``forget_locks``). Returns how many deliveries."""
    now = now or utc_now()
    with rt.db.session() as session, session.begin():
        app_store.forget_locks(session, now)
        return app_store.delete_old_deliveries(session, now - _dt.timedelta(seconds=rt.settings.delivery_retention))


def expire_runs(rt: Runtime, now=None) -> list[str]:
    """Mark runs that never reported back within ``PERFGATE_RUN_TIMEOUT`` as timed out (check
    run ``timed_out``, comment updated). Returns their keys.

    Each run is re-read under its PR's lease (the jobs that conclude runs hold it too): a run
    that ended in the meantime is left as it is, one whose results are stored (concluding them on
    GitHub failed) is concluded from them, never timed out; a run whose PR is busy waits for the
    next sweep.
    """
    now = now or utc_now()
    with rt.db.session() as session:
        stale = [app_store.run_info(run)
                 for run in app_store.expired(app_store.active_runs(session), now, rt.settings.run_timeout)]
    done = []
    for run in stale:
        try:
            with lease(rt, lease_name(run.repository, run.pr_number)):
                with rt.db.session() as session:
                    row = app_store.get_run(session, run.key)
                    info = app_store.run_info(row) if row is not None else None
                if info is None or not info.active:  # ended meanwhile
                    continue
                if info.has_results:  # only concluding them failed: concluded, never timed out
                    client = rt.client_for(info.installation_id)
                    carry_out(rt, client, runs.conclude_run(rt, client, info))
                else:
                    _time_out(rt, info)
        except GitHubError as exc:
            log.warning("run %s: could not conclude its stored results: %s", run.key, exc.detail)
            continue
        except Busy:
            continue
        done.append(run.key)
    return done


def _time_out(rt: Runtime, run: RunInfo) -> None:
    """Time ``run`` out (``bot.app.core.conclude.timed_out``) with what follows (``closing``)."""
    hours = rt.settings.run_timeout / 3600
    actions = conclude.timed_out(run, timeout_hours=hours,
                                 workflow_url=rt.github_link(run.workflow_url))
    try:
        client = rt.client_for(run.installation_id) if run.installation_id is not None else None
        facts = runs.conclusion_facts(rt, client, run, with_results=False)
        carry_out(rt, client, conclude.closing(run, actions, facts, github=client is not None,
                                               problem=messages.no_report(hours)))
    except GitHubError as exc:  # recorded as timed out all the same (its row was the last step)
        log.warning("run %s: could not report the time-out: %s", run.key, exc.detail)
        carry_out(rt, None, conclude.ending(run, actions, (), github=False))


#: :func:`reconcile_ended` looks at the runs that ended between ``RECONCILE_AFTER`` and
#: ``RECONCILE_WITHIN`` ago: late enough for a POST GitHub carried out late (a time-out is
#: seconds) to show, and — the sweep runs every 5 minutes — each run about twice, not forever.
RECONCILE_AFTER, RECONCILE_WITHIN = _dt.timedelta(minutes=15), _dt.timedelta(minutes=25)


def reconcile_ended(rt: Runtime, now=None, after: _dt.timedelta | None = None) -> list[str]:
    """Set right what GitHub shows about recently ended runs (``bot.app.core.conclude.left_open``,
    ``duplicate_stickies``): complete their check runs left open and delete duplicate sticky
    comments, under each PR's lease (a busy PR waits for the next sweep). Looks at the runs that
    ended between ``after`` (default :data:`RECONCILE_AFTER`; ``perfgate sweep --reconcile-after``)
    and ``after`` + 10 minutes, at least :data:`RECONCILE_WITHIN`, before ``now``. Returns the
    ``owner/repo@head`` of the commits looked at."""
    now = now or utc_now()
    after = RECONCILE_AFTER if after is None else after
    within = max(RECONCILE_WITHIN, after + (RECONCILE_WITHIN - RECONCILE_AFTER))
    with rt.db.session() as session:
        heads = sorted({(r.repository, r.head_sha, r.pr_number, r.installation_id)
                        for r in app_store.ended_between(session, now - within, now - after)},
                       key=lambda h: (h[0], h[1], h[2] or 0))
    done = []
    for repository, head, number, installation in heads:
        if installation is None:  # no installation to act as
            continue
        try:
            with lease(rt, lease_name(repository, number)):
                client = rt.client_for(installation)
                with rt.db.session() as session:
                    infos = [app_store.run_info(r) for r in app_store.runs_at_head(session, repository, head)]
                    pull = app_store.get_pull(session, repository, number) if number is not None else None
                actions = conclude.left_open(infos, client.check_runs(repository, name=messages.CHECK_NAME,
                                                                      head_sha=head))
                if number is not None:
                    actions += conclude.duplicate_stickies(repository, number,
                                                           pull.comment_id if pull is not None else None,
                                                           client.stickies(repository, number))
                carry_out(rt, client, actions)
        except GitHubError as exc:
            log.warning("%s@%s: could not reconcile the check runs: %s", repository, head, exc.detail)
            continue
        except Busy:
            continue
        done.append(f"{repository}@{head}")
    return done
