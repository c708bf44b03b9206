"""The background job (imperative shell): a stored delivery → the facts its handler declares
(``bot.app.core.handlers.facts_for``, read by ``bot.app.job.gather``) →
``bot.app.core.handlers.decide`` → actions carried out against the database and GitHub
(``bot.app.job.effects``).

Runs in the Huey consumer (``perfgate worker``), never in the webhook request. At-least-once
work with effects done once:

- *Jobs of one PR run one at a time*: a job holds a lease on its PR (``bot.app.job.lease``; which
  lease: ``bot.app.core.facts.lease_name``); a job that finds the PR busy raises
  ``bot.app.job.shell.Busy`` and the queue runs it again shortly.
- *A retry resumes where the job stopped*: the decided actions are stored with the delivery
  before the first is carried out, and the count of those done after each; a retried job
  carries out the rest of that plan instead of deciding again on facts its own first steps
  changed. The action at which it stopped is carried out *resuming* (``bot.app.job.shell.Step``):
  one that creates something on GitHub first looks for what it may have created, so nothing is
  posted or dispatched twice.

This module decides nothing about the App's policy; it holds the retry mechanics: which failure
is final (:func:`final_failure`) and where a retry resumes.
"""

from __future__ import annotations

import datetime as _dt
import uuid

from runner.errors import UserError

from ..core import access, handlers
from . import gather
from ..store import store as app_store
from ..core.actions import Action, decode, encode
from .effects import execute
from ..core.events import Event
from ..core.facts import FactRequest, lease_name
from ..core.handlers import Route
from ..github.gateway import InstallationClient
from ..github.github_errors import GitHubError
from .lease import lease
from ...db import utc_now
from .shell import MESSAGE_VALID, RETRIES, STEP, Runtime, Step, log

#: Delivery states whose work is over: a job that finds one does nothing (``abandoned``: it
#: failed for good, :func:`final_failure`; the sweep leaves it, GitHub's Redeliver queues it again).
SETTLED = ("done", "ignored", "abandoned")


def handle_delivery(rt: Runtime, delivery_id: str, *, message: str | None = None) -> list[Action]:
    """Process one stored delivery under its PR's lease (see the module docstring). Returns
    the actions carried out (for logs and tests); none when another job finished it already,
    when the queue ``message`` that asked for it (its id and retries left) was run before — a
    replay (security review P10) — or when it failed for good: a payload its handler cannot read,
    or :func:`final_failure` (recorded ``abandoned`` with the error; not raised, so nothing
    retries it).

    Raises:
        bot.app.job.shell.Busy: another job holds the PR's lease (nothing was done; run this job
        again). Exception: whatever an action raised that may go otherwise next time; the failure is
            recorded on the delivery (``failed`` + the error) so Huey may retry the job, which
            resumes at that action.
    """
    unreadable = None
    with rt.db.session() as session:
        row = app_store.get_delivery(session, delivery_id)
        if row is None:
            log.warning("delivery %s is not stored", delivery_id)
            return []
        event = Event(row.event, row.delivery_id, dict(row.payload), row.action)
        route = handlers.route_of(event)
        if route is not None:
            try:
                request = route.facts_of(event)
            except Exception as exc:  # noqa: BLE001 - a payload the handler cannot read: it will never read it
                unreadable = exc
            else:
                name = lease_name(event.repository, request.pr_number,
                                  gather.lease_run(session, event.repository or "-", request))
    if route is None:  # no handler for it (the core's registry): nothing to do
        _finish(rt, delivery_id, "ignored")
        return []
    if unreadable is not None:
        _abandon(rt, delivery_id, unreadable)
        return []
    with lease(rt, name):
        begun = _begin_attempt(rt, delivery_id, event, message)
        if begun is None:
            return []
        attempt, plan, done = begun
        try:
            client = rt.client_for(event.installation_id) if event.installation_id else None
            actions, resume_at = _decide_or_resume(rt, client, delivery_id, event, route, request,
                                                   plan, done)
            _run_steps(rt, client, delivery_id, actions, resume_at, attempt)
        except Exception as exc:
            if final_failure(exc, attempt):
                _abandon(rt, delivery_id, exc)
                return []
            _finish(rt, delivery_id, "failed", f"{type(exc).__name__}: {exc}")
            raise
        _finish(rt, delivery_id, "done", steps=len(actions))
    return actions


def _begin_attempt(rt: Runtime, delivery_id: str, event: Event,
                   message: str | None = None) -> tuple[int, list | None, int] | None:
    """Count this attempt and record the repositories' visibility the event tells, under the lease.

    Returns ``(attempt, plan, done)``: this attempt's number (1 the first), the stored plan
    (encoded actions; None before the first attempt decided) and the count of its steps done;
    None when the queue ``message`` was run before (recorded here, in the database, which the
    queue's password does not reach, for as long as a message is valid) or the delivery's work is
    over already (:data:`SETTLED`).
    """
    with rt.db.session() as session, session.begin():
        first = message is None or app_store.acquire_lock(
            session, f"queue message {message}", uuid.uuid4().hex, utc_now(),
            _dt.timedelta(seconds=MESSAGE_VALID))
        if not first:
            log.warning("delivery %s: queue message %s was run before (a replay): dropped",
                        delivery_id, message)
            return None
        row = app_store.get_delivery(session, delivery_id)
        if row.status in SETTLED:  # retry mechanics: another job (the sweep, a redelivery) ended it
            return None
        row.attempts = attempt = (row.attempts or 0) + 1
        plan, done, received_at = (row.plan or {}).get("actions"), row.step or 0, row.received_at
        for name, private, publicized in access.visibility_records(event.name, event.action,
                                                                   event.repository, event.data):
            app_store.record_visibility(session, name, private, received_at, publicized=publicized)
    return attempt, plan, done


def _decide_or_resume(rt: Runtime, client: InstallationClient | None, delivery_id: str,
                      event: Event, route: Route, request: FactRequest, plan: list | None,
                      done: int) -> tuple[list[Action], int | None]:
    """The actions to carry out and the step a retry resumes at: the first attempt (``plan``
    None) decides on the facts gathered now and stores its plan before any step (resumes at
    None); a retry decodes the stored ``plan`` and resumes at ``done``, its count of steps done.

    Raises:
        UserError: actions that need GitHub for a delivery without an installation id.
    """
    if plan is None:  # retry mechanics: the first attempt decides, a retry resumes the stored plan
        actions = route.decide(event, gather.fetch_facts(rt, client, event, request))
        if client is None and handlers.needs_installation(actions):
            raise UserError(f"{event.name} delivery without an installation id")
        with rt.db.session() as session, session.begin():
            app_store.save_plan(session, delivery_id, [encode(a) for a in actions])
        return actions, None
    actions = [decode(a) for a in plan]
    log.info("delivery %s: resuming at step %d of %d", delivery_id, done + 1, len(actions))
    return actions, done


def _run_steps(rt: Runtime, client: InstallationClient | None, delivery_id: str,
               actions: list[Action], resume_at: int | None, attempt: int) -> None:
    """Carry out ``actions`` from step ``resume_at`` (that one resuming; None: from the first),
    storing the count of steps done after each but the last."""
    for index in range(resume_at or 0, len(actions)):
        token = STEP.set(Step(delivery_id, index, resume=index == resume_at, attempt=attempt))
        try:
            execute(rt, client, actions[index])
        finally:
            STEP.reset(token)
        if index + 1 < len(actions):  # retry mechanics: the last step's count goes with the end
            with rt.db.session() as session, session.begin():
                app_store.advance(session, delivery_id, index + 1)


def final_failure(exc: BaseException, attempt: int) -> bool:
    """Would running the job again end the same way? (Then its delivery is ``abandoned``, not
    ``failed``: the 10-minute sweep would otherwise run it again for 6 hours, review N10.)

    - A delivery perfgate cannot act on (``UserError``: no usable installation id, a payload the
      handler cannot read — no retry changes a stored payload): at once.
    - GitHub refusing a request (a 4xx that is not a rate limit and not 401, e.g. 404 gone, 403
      not permitted, 422 invalid) once the job's own retries (``bot.app.job.shell.RETRIES``, about a
      minute) saw the same: a refusal can follow a write GitHub has not replicated yet.
    - Anything else — no answer, a 5xx, a rate limit, a 401 (the App's key or clock), the
      database, a bug — is transient: failed, and retried by Huey and the sweep.
    """
    if isinstance(exc, GitHubError):
        return not exc.transient and 400 <= exc.status < 500 and exc.status != 401 and attempt >= RETRIES + 1
    return isinstance(exc, UserError)


def _abandon(rt: Runtime, delivery_id: str, exc: BaseException) -> None:
    log.warning("delivery %s failed for good: %s: %s", delivery_id, type(exc).__name__,
                getattr(exc, "detail", None) or exc)
    _finish(rt, delivery_id, "abandoned", f"{type(exc).__name__}: {exc}")


def _finish(rt: Runtime, delivery_id: str, status: str, error: str | None = None, *, steps: int | None = None) -> None:
    """Record the delivery's end (``steps``: with the count of its plan's steps done)."""
    with rt.db.session() as session, session.begin():
        if steps is not None:
            app_store.advance(session, delivery_id, steps)
        app_store.finish_delivery(session, delivery_id, status, error)
