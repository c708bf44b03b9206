"""The App's storage shell: rows of ``bot.app.store.tables`` in, plain data (``RunInfo``, ...)
out. Every function takes an open ``Session``; the caller commits (``with db.session() as s,
s.begin(): ...``)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from functools import lru_cache
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...db import insert_missing, insert_missing_statement, utc_now
from ...history.tables import Repository
from ..core import access
from ..core.actions import RegressionSpec
from ..core.events import Event
from ..core.facts import ACTIVE_STATES, ENDED_STATES, RegressionInfo, RunInfo, head_seen_after
from .tables import AppPull, CommandSeen, Delivery, Installation, Lock, Refusal, Regression, Run


# -- deliveries ---------------------------------------------------------------------------------
def record_delivery(session: Session, event: Event) -> bool:
    """Store a verified delivery (status ``queued``); False when its ``X-GitHub-Delivery`` was
    stored before (by an earlier delivery, or a concurrent request that committed first).

    One ``INSERT … ON CONFLICT (delivery_id) DO NOTHING RETURNING id`` (built once per dialect):
    no read, no SAVEPOINT, no ORM flush — ≈0.5 ms of CPU with the commit (the ORM's check-then-
    insert: ≈0.9 / ≈1.4 ms; evaluation/RESULTS_app.md). Durable once the caller commits.
    """
    connection = session.connection()
    values = {"delivery_id": event.delivery_id, "event": event.name, "action": event.action,
              "installation_id": event.installation_id, "repository": event.repository, "payload": event.data}
    return connection.execute(_insert_delivery(connection.dialect.name), values).first() is not None


@lru_cache(maxsize=None)
def _insert_delivery(dialect: str):
    """``INSERT INTO app_deliveries … ON CONFLICT (delivery_id) DO NOTHING RETURNING id`` for
    ``dialect`` (built once: SQLAlchemy then reuses its compiled form)."""
    return insert_missing_statement(dialect, Delivery, ("delivery_id",))


def get_delivery(session: Session, delivery_id: str) -> Delivery | None:
    return session.scalar(select(Delivery).where(Delivery.delivery_id == delivery_id))


def retry_delivery(session: Session, delivery_id: str, now: _dt.datetime, stale_after: _dt.timedelta) -> bool:
    """Mark a stored delivery ``queued`` again when its work was lost: its job ``failed`` (or
    was ``abandoned`` as failed for good: only GitHub's Redeliver, an operator's choice, calls
    this for one — the sweep never finds it), or it has been ``queued`` for longer than
    ``stale_after`` (its worker died, or the queue lost the job). True when it should be
    enqueued again (``queued_at`` then ``now``); one done, ignored or just queued is left alone."""
    row = get_delivery(session, delivery_id)
    if row is None:
        return False
    stale = row.status == "queued" and (row.queued_at or row.received_at) < now - stale_after
    if row.status in ("failed", "abandoned") or stale:
        row.status, row.error, row.finished_at, row.queued_at = "queued", None, None, now
        return True
    return False


def lost_deliveries(session: Session, now: _dt.datetime, stale_after: _dt.timedelta,
                    within: _dt.timedelta) -> list[str]:
    """Deliveries received within ``within`` whose work was lost (``failed``, or ``queued``,
    for longer than ``stale_after``), oldest first: what the periodic sweep enqueues again
    (never an ``abandoned`` one: it failed for good, ``bot.app.job.executor.final_failure``). A
    delivery that failed a moment ago is left alone: Huey retries it, and a GitHub write that
    timed out may still be carried out by GitHub (the retry then finds it)."""
    queued_at = func.coalesce(Delivery.queued_at, Delivery.received_at)
    failed_at = func.coalesce(Delivery.finished_at, Delivery.received_at)
    lost = or_((Delivery.status == "failed") & (failed_at < now - stale_after),
               (Delivery.status == "queued") & (queued_at < now - stale_after))
    return list(session.scalars(select(Delivery.delivery_id).where(lost, Delivery.received_at >= now - within)
                                .order_by(Delivery.received_at, Delivery.id)))


def finish_delivery(session: Session, delivery_id: str, status: str, error: str | None = None) -> None:
    row = get_delivery(session, delivery_id)
    if row is not None:
        row.status, row.error, row.finished_at = status, (error or None) and error[:2000], utc_now()


def save_plan(session: Session, delivery_id: str, plan: list[dict[str, Any]]) -> None:
    """Store the encoded actions decided for a delivery (``bot.app.core.actions.encode``), none
    done."""
    row = get_delivery(session, delivery_id)
    row.plan, row.step = {"actions": plan}, 0


def advance(session: Session, delivery_id: str, step: int) -> None:
    """Record that the first ``step`` actions of the delivery's plan are done."""
    session.execute(update(Delivery).where(Delivery.delivery_id == delivery_id).values(step=step))


def delete_old_deliveries(session: Session, before: _dt.datetime) -> int:
    """Forget deliveries received before ``before`` whose work ended (done, ignored, abandoned) or
    failed (the sweep stopped retrying them long ago); how many."""
    result = session.execute(delete(Delivery).where(Delivery.received_at < before, Delivery.status.in_(
        ("done", "ignored", "abandoned", "failed"))))
    return result.rowcount or 0


# -- locks ---------------------------------------------------------------------------------------
def acquire_lock(session: Session, name: str, holder: str, now: _dt.datetime, ttl: _dt.timedelta) -> bool:
    """Take (or renew) the lease on ``name`` for ``holder`` until ``now + ttl``: True when
    ``holder`` has it, False while another's runs (a conditional UPDATE, else a unique INSERT)."""
    taken = session.execute(update(Lock).where(Lock.name == name, or_(Lock.holder == holder, Lock.expires_at < now))
                            .values(holder=holder, expires_at=now + ttl))
    if taken.rowcount:
        return True
    try:
        with session.begin_nested():
            session.add(Lock(name=name, holder=holder, expires_at=now + ttl))
            session.flush()
    except IntegrityError:
        return False
    return True


def release_lock(session: Session, name: str, holder: str) -> None:
    """Give the lease on ``name`` back (only ``holder``'s own)."""
    session.execute(delete(Lock).where(Lock.name == name, Lock.holder == holder))


def forget_locks(session: Session, now: _dt.datetime) -> int:
    """Delete the leases, and the queue messages' runs, that expired before ``now``; how many."""
    return session.execute(delete(Lock).where(Lock.expires_at < now)).rowcount or 0


# -- installations ------------------------------------------------------------------------------
def save_installation(session: Session, installation_id: int, account: str | None, active: bool) -> None:
    row = session.get(Installation, installation_id)
    if row is None:
        insert_missing(session, Installation, {"id": installation_id}, ("id",))
        row = session.get(Installation, installation_id)
    row.account, row.active = account or row.account, active
    session.flush()


def installations(session: Session) -> list[Installation]:
    return list(session.scalars(select(Installation).order_by(Installation.account)))


# -- repositories -------------------------------------------------------------------------------
def record_visibility(session: Session, full_name: str, private: bool, at: _dt.datetime, *,
                      publicized: bool = False) -> bool:
    """Record what a delivery received at ``at`` says of ``owner/name``'s visibility, by
    :func:`bot.app.core.access.next_visibility` (only newer evidence moves it; towards public only a
    newer ``publicized`` notice). Returns the ``private`` now recorded.

    Atomic with concurrent jobs: the row is created by ``INSERT … ON CONFLICT DO NOTHING``
    (``bot.db.insert_missing``: no unique-constraint race between two first deliveries) and
    read under a row lock (``SELECT … FOR NO KEY UPDATE`` on PostgreSQL; on SQLite the insert
    took the write lock), so the decision is made on the newest committed row and no write is
    lost. The caller records several repositories in name order (no two jobs wait in a cycle).
    """
    insert_missing(session, Repository, {"full_name": full_name}, ("full_name",))
    row = session.scalar(select(Repository).where(Repository.full_name == full_name)
                         .with_for_update(key_share=True)  # FOR NO KEY UPDATE: results may go on referring to it
                         .execution_options(populate_existing=True))
    new = access.next_visibility(access.Visibility(row.private, row.private_at, row.publicized_at), private, at,
                                 publicized=publicized)
    row.private, row.private_at, row.publicized_at = new.private, new.at, new.publicized_at
    session.flush()
    return bool(new.private)


# -- pulls --------------------------------------------------------------------------------------
def get_pull(session: Session, repository: str, number: int) -> AppPull | None:
    return session.scalar(select(AppPull).where(AppPull.repository == repository, AppPull.number == number))


def save_pull(session: Session, repository: str, number: int, changes: dict[str, Any]) -> AppPull:
    """Create or update a PR's row with ``changes``. ``head_seen_at`` is the earliest time the
    current ``head_sha`` is known to have been the head: kept when a later event shows the same
    head, reset (to the given time, or unknown) when the head changes."""
    row = get_pull(session, repository, number)
    if row is None:
        insert_missing(session, AppPull, {"repository": repository, "number": number}, ("repository", "number"))
        row = get_pull(session, repository, number)
    changes = dict(changes)
    row.head_seen_at = head_seen_after(row.head_sha, row.head_seen_at, changes)
    changes.pop("head_seen_at", None)
    for name, value in changes.items():
        if not hasattr(AppPull, name):
            raise AttributeError(f"app_pulls has no column {name!r}")
        setattr(row, name, value)
    session.flush()
    return row


# -- runs ---------------------------------------------------------------------------------------
def run_info(row: Run) -> RunInfo:
    """The stored run as plain data: the columns named as :class:`RunInfo`'s fields, its labels,
    ``group_key``, ``workflow_run_url`` and whether its results are stored."""
    same = {f.name: getattr(row, f.name) for f in dataclasses.fields(RunInfo)
            if f.name in Run.__table__.columns and f.name != "runs_on"}
    return RunInfo(**same, runs_on=_labels(row.runs_on), group=row.group_key,
                   workflow_url=row.workflow_run_url, has_results=row.result_id is not None)


def _labels(text: str | None) -> tuple[str, ...]:
    """Runner labels stored comma-separated (a label holds no comma, ``runner.config``)."""
    return tuple(label for label in (text or "").split(",") if label)


def runs_of_group(session: Session, group: str) -> list[Run]:
    """The runs one request started (one per runner group), in the order they were stored."""
    return list(session.scalars(select(Run).where(Run.group_key == group).order_by(Run.created_at, Run.id)))


def get_run(session: Session, key: str) -> Run | None:
    return session.scalar(select(Run).where(Run.key == key))


def run_for_workflow(session: Session, repository: str, workflow_run_id: int) -> Run | None:
    return session.scalar(select(Run).where(Run.repository == repository, Run.workflow_run_id == workflow_run_id))


def runs_at_head(session: Session, repository: str, head_sha: str) -> list[Run]:
    """The runs of ``repository`` that measured ``head_sha``, oldest first."""
    return list(session.scalars(select(Run).where(Run.repository == repository, Run.head_sha == head_sha)
                                .order_by(Run.created_at, Run.id)))


def runs_of_pull(session: Session, repository: str, number: int) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.repository == repository, Run.pr_number == number)
                                .order_by(Run.created_at, Run.id)))


def insert_run(session: Session, spec: RunInfo) -> Run | None:
    """Store a new queued run; None when ``spec.key`` exists (the trigger was handled before)."""
    if get_run(session, spec.key) is not None:
        return None
    row = Run(key=spec.key, repository=spec.repository, installation_id=spec.installation_id,
              pr_number=spec.pr_number, kind=spec.kind, trigger=spec.trigger, requested_by=spec.requested_by,
              base_sha=spec.base_sha, head_sha=spec.head_sha, base_ref=spec.base_ref, head_ref=spec.head_ref,
              filter=spec.filter, rounds=spec.rounds, threshold=spec.threshold, profile=spec.profile,
              status="queued", runner=spec.runner, runs_on=",".join(spec.runs_on) or None, group_key=spec.group)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        return None
    return row


def update_run(session: Session, key: str, **changes: Any) -> Run | None:
    row = get_run(session, key)
    if row is None:
        return None
    for name, value in changes.items():
        setattr(row, name, value)
    if changes.get("status") in ENDED_STATES and row.completed_at is None:
        row.completed_at = utc_now()
    session.flush()
    return row


def delete_run(session: Session, key: str) -> None:
    row = get_run(session, key)
    if row is not None:
        session.delete(row)
        session.flush()


def ended_between(session: Session, start: _dt.datetime, end: _dt.datetime) -> list[Run]:
    """The runs that ended (``completed_at``) in ``[start, end)``, oldest first."""
    return list(session.scalars(select(Run).where(Run.status.in_(ENDED_STATES), Run.completed_at >= start,
                                                  Run.completed_at < end).order_by(Run.completed_at, Run.id)))


def active_runs(session: Session) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.status.in_(ACTIVE_STATES)).order_by(Run.created_at)))


def recent_runs(session: Session, limit: int = 50, repository: str | None = None, offset: int = 0) -> list[Run]:
    """Runs newest first (``created_at``, then id): ``limit`` of them after the first ``offset``
    (a page of the run list, read in SQL)."""
    query = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).offset(offset).limit(limit)
    if repository:
        query = query.where(Run.repository == repository)
    return list(session.scalars(query))


def latest_concluded_run(session: Session, repository: str, number: int,
                         before: _dt.datetime | None = None) -> Run | None:
    """The PR's newest run with stored results (completed strictly before ``before``, when given)."""
    query = select(Run).where(Run.repository == repository, Run.pr_number == number, Run.result_id.is_not(None))
    if before is not None:
        query = query.where(Run.completed_at < before)
    return session.scalar(query.order_by(Run.completed_at.desc(), Run.id.desc()).limit(1))


# -- commands -----------------------------------------------------------------------------------
def last_command(session: Session, repository: str, comment_id: int) -> str | None:
    row = session.scalar(select(CommandSeen).where(CommandSeen.repository == repository,
                                                   CommandSeen.comment_id == comment_id))
    return row.text if row else None


def remember_command(session: Session, repository: str, comment_id: int, text: str, login: str | None) -> None:
    inserted = insert_missing(session, CommandSeen, {"repository": repository, "comment_id": comment_id,
                                                     "text": text, "login": login}, ("repository", "comment_id"))
    if not inserted:
        session.execute(update(CommandSeen).where(CommandSeen.repository == repository,
                                                  CommandSeen.comment_id == comment_id)
                        .values(text=text, login=login))


def refused_before(session: Session, repository: str, number: int, login: str) -> bool:
    return session.scalar(select(Refusal.id).where(Refusal.repository == repository, Refusal.pr_number == number,
                                                   Refusal.login == login)) is not None


def remember_refusal(session: Session, repository: str, number: int, login: str) -> None:
    insert_missing(session, Refusal, {"repository": repository, "pr_number": number, "login": login},
                   ("repository", "pr_number", "login"))


def expired(runs: list[Run], now: _dt.datetime, timeout_s: float) -> list[Run]:
    """Active runs created more than ``timeout_s`` seconds before ``now``."""
    limit = now - _dt.timedelta(seconds=timeout_s)
    return [r for r in runs if r.status in ACTIVE_STATES and r.created_at <= limit]


# -- regressions on the default branch -------------------------------------------------------------
def regression_info(row: Regression) -> RegressionInfo:
    return RegressionInfo(key=row.key, repository=row.repository, benchmark=row.benchmark, good_sha=row.good_sha,
                          bad_sha=row.bad_sha, status=row.status, trigger=row.trigger,
                          installation_id=row.installation_id, fingerprint=row.fingerprint,
                          environment=row.environment, runner=row.runner, runs_on=_labels(row.runs_on),
                          ratio=row.ratio, requested_by=row.requested_by, issue_number=row.issue_number,
                          bisect_key=row.bisect_key, culprit_sha=row.culprit_sha, culprit_pr=row.culprit_pr,
                          outcome=row.outcome, closed_reason=row.closed_reason,
                          also=tuple(line for line in (row.also or "").splitlines() if line))


def get_regression(session: Session, key: str) -> Regression | None:
    return session.scalar(select(Regression).where(Regression.key == key))


def insert_regression(session: Session, spec: RegressionSpec) -> bool:
    """Store a regression to track; False when ``spec.key`` is stored already (``INSERT … ON
    CONFLICT DO NOTHING``: two jobs that find the same change point store one row)."""
    return insert_missing(session, Regression, {
        "key": spec.key, "repository": spec.repository, "installation_id": spec.installation_id,
        "benchmark": spec.benchmark, "fingerprint": spec.fingerprint, "environment": spec.environment,
        "runner": spec.runner, "runs_on": ",".join(spec.runs_on) or None, "trigger": spec.trigger,
        "requested_by": spec.requested_by, "good_sha": spec.good_sha, "bad_sha": spec.bad_sha, "ratio": spec.ratio,
        "also": "\n".join(name.replace("\n", " ") for name in spec.also) or None, "status": "open",
        "created_at": utc_now(), "updated_at": utc_now()},
        ("key",))


def update_regression(session: Session, key: str, **changes: Any) -> Regression | None:
    row = get_regression(session, key)
    if row is None:
        return None
    for name, value in changes.items():
        setattr(row, name, value)
    session.flush()
    return row


def regressions_of(session: Session, repository: str) -> list[Regression]:
    """Every regression tracked in ``repository``, oldest first."""
    return list(session.scalars(select(Regression).where(Regression.repository == repository)
                                .order_by(Regression.created_at, Regression.id)))


def regression_of_bisect(session: Session, bisect_key: str) -> Regression | None:
    """The regression whose latest bisect is run ``bisect_key``."""
    return session.scalar(select(Regression).where(Regression.bisect_key == bisect_key))


def regression_of_issue(session: Session, repository: str, issue_number: int) -> Regression | None:
    """The regression tracked in issue ``issue_number`` of ``repository`` (the newest, if several)."""
    return session.scalar(select(Regression).where(Regression.repository == repository,
                                                   Regression.issue_number == issue_number)
                          .order_by(Regression.id.desc()).limit(1))


def claim_notification(session: Session, key: str, now: _dt.datetime) -> bool:
    """Claim regression ``key``'s one message: True for the one caller that set ``notified_at``
    (a conditional UPDATE: two jobs never both send), False when it was claimed before."""
    result = session.execute(update(Regression).where(Regression.key == key, Regression.notified_at.is_(None))
                             .values(notified_at=now))
    return result.rowcount == 1


def release_notification(session: Session, key: str) -> None:
    """Give the claim back: the message surely did not go out (no connection was made)."""
    session.execute(update(Regression).where(Regression.key == key).values(notified_at=None))
