"""The background job (imperative shell): a stored delivery → the facts its handler declares
(``bot.app.handlers.facts_for``) → ``bot.app.handlers.decide`` →
actions carried out against the database and GitHub; plus result ingestion and the
time-out sweep.

Runs in the Huey consumer (``perfgate worker``), never in the webhook request. At-least-once
work with effects done once:

- *Jobs of one PR run one at a time*: a job holds a lease on its PR (``app_locks``, renewed
  while it runs, so a killed worker's lease runs out in :data:`LOCK_TTL`); a job that finds the
  PR busy raises :class:`Busy` and the queue runs it again shortly.
- *A retry resumes where the job stopped*: the decided actions are stored with the delivery
  before the first is carried out, and the count of those done after each; a retried job
  carries out the rest of that plan instead of deciding again on facts its own first steps
  changed. The action at which it stopped is carried out *resuming*: one that creates
  something on GitHub first looks for what it may have created (the check run by its
  ``external_id``, the workflow run by its name ``perfgate <run-id>``, a reply by its hidden
  mark), so nothing is posted or dispatched twice.
- The rest is idempotent by itself: the sticky comment is found by its marker and edited,
  reactions are idempotent on GitHub's side, cancelling a finished workflow run is not an
  error, a run with stored results is concluded without downloading them again.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as _dt
import hashlib
import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from runner.config import Config
from runner.config import from_texts as config_from_texts
from runner.errors import ConfigError, UserError
from runner.results import verdict_of
from runner.report.escape import md_text, safe_link

from ..db import Database, utc_now
from ..history import core as history_core
from ..history import store as history_store
from ..history.core import is_repository_name
from ..history.tables import Result
from ..settings import Settings
from . import access, conclude, handlers, ingest, messages, regressions, tracking
from . import store as app_store
from .actions import (AcceptRegression, Action, CancelRun, Ingest, MarkInProgress, React, RecordMerge, RememberCommand,
                      RememberRefusal, Reply, ReplyHistory, SaveInstallation, SavePull, StartRun, UpdateCheckRun,
                      UpdateRun, UpsertComment, decode, dispatch_inputs, encode)
from .events import Event
from .facts import ConcludedRun, FactRequest, Facts, may_command
from .gateway import GitHubError, InstallationClient
from .queue import RETRIES
from .tables import ACTIVE_STATES, Run

log = logging.getLogger("perfgate.bot")


@dataclass
class Runtime:
    """What a job needs: the database, the App's settings and a way to act as an installation;
    ``queue``: the job queue (``bot.app.queue.JobQueue``) once ``bot.app.runtime.build_runtime``
    has made it."""

    db: Database
    settings: Settings
    client_for: Callable[[int], InstallationClient]
    queue: Any = None

    def details_url(self, key: str) -> str | None:
        """The run page (check run ``details_url``); None without ``PERFGATE_PUBLIC_URL``."""
        return f"{self.settings.public_url}/runs/{key}" if self.settings.public_url else None

    def github_link(self, url: str | None) -> str | None:
        """``url`` if it is an ``https://`` page of the configured GitHub host, else None
        (payload and stored URLs are written into comments only through here)."""
        return safe_link(url, self.settings.github_url)


# -- entry points -------------------------------------------------------------------------------
#: Attempts of a delivery's job before a transient GitHub error (no answer, 5xx, rate limit) on
#: a run's dispatch or results is reported on the check run instead of retried: three rounds
#: of Huey's retries (the job's own and two sweeps', 20 minutes or more).
GIVE_UP_AFTER = 3 * (RETRIES + 1)

#: A job's lease on its PR, renewed every :data:`LOCK_RENEW` seconds while it runs: a killed
#: worker holds up the PR's next jobs for at most this long.
LOCK_TTL, LOCK_RENEW = _dt.timedelta(seconds=60), 20.0


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


_STEP: contextvars.ContextVar[Step | None] = contextvars.ContextVar("perfgate_step", default=None)


def handle_delivery(rt: Runtime, delivery_id: str) -> list[Action]:
    """Process one stored delivery under its PR's lease (see the module docstring). Returns
    the actions carried out (for logs and tests); none when another job finished it already,
    or when it failed for good: a payload its handler cannot read, or :func:`final_failure`
    (recorded ``abandoned`` with the error; not raised, so nothing retries it).

    Raises:
        Busy: another job holds the PR's lease (nothing was done; run this job again).
        Exception: whatever an action raised that may go otherwise next time; the failure is
            recorded on the delivery (``failed`` + the error) so Huey may retry the job, which
            resumes at that action.
    """
    with rt.db.session() as session:
        row = app_store.get_delivery(session, delivery_id)
        if row is None:
            log.warning("delivery %s is not stored", delivery_id)
            return []
        event = Event(row.event, row.delivery_id, dict(row.payload), row.action)
    if not handlers.handled(event.name, event.action):
        _finish(rt, delivery_id, "ignored")
        return []
    try:
        request = handlers.facts_for(event)
    except Exception as exc:  # noqa: BLE001 - a payload the handler cannot read: it will never read it
        _abandon(rt, delivery_id, exc)
        return []
    with lease(rt, _lock_name(rt, event, request)):
        with rt.db.session() as session, session.begin():
            row = app_store.get_delivery(session, delivery_id)
            if row.status in SETTLED:
                return []  # a second job for the same delivery (the sweep, a redelivery): done already
            row.attempts = attempt = (row.attempts or 0) + 1
            plan, done, received_at = (row.plan or {}).get("actions"), row.step or 0, row.received_at
        try:
            _remember_visibility(rt, event, received_at)
            client = rt.client_for(event.installation_id) if event.installation_id else None
            if plan is None:
                actions = handlers.decide(event, fetch_facts(rt, client, event, request))
                if actions and client is None and any(not isinstance(a, SaveInstallation) for a in actions):
                    raise UserError(f"{event.name} delivery without an installation id")
                with rt.db.session() as session, session.begin():
                    app_store.save_plan(session, delivery_id, [encode(a) for a in actions])
                resume_at, done = None, 0
            else:
                actions, resume_at = [decode(a) for a in plan], done
                log.info("delivery %s: resuming at step %d of %d", delivery_id, done + 1, len(actions))
            for index in range(done, len(actions)):
                token = _STEP.set(Step(delivery_id, index, resume=index == resume_at, attempt=attempt))
                try:
                    execute(rt, client, actions[index])
                finally:
                    _STEP.reset(token)
                with rt.db.session() as session, session.begin():
                    app_store.advance(session, delivery_id, index + 1)
        except Exception as exc:
            if final_failure(exc, attempt):
                _abandon(rt, delivery_id, exc)
                return []
            _finish(rt, delivery_id, "failed", f"{type(exc).__name__}: {exc}")
            raise
        _finish(rt, delivery_id, "done")
    return actions


#: Delivery states whose work is over: a job that finds one does nothing (``abandoned``: it
#: failed for good, :func:`final_failure`; the sweep leaves it, GitHub's Redeliver queues it again).
SETTLED = ("done", "ignored", "abandoned")


def final_failure(exc: BaseException, attempt: int) -> bool:
    """Would running the job again end the same way? (Then its delivery is ``abandoned``, not
    ``failed``: the 10-minute sweep would otherwise run it again for 6 hours, review N10.)

    - A delivery perfgate cannot act on (``UserError``: no usable installation id, a payload the
      handler cannot read — no retry changes a stored payload): at once.
    - GitHub refusing a request (a 4xx that is not a rate limit and not 401, e.g. 404 gone, 403
      not permitted, 422 invalid) once the job's own retries (``bot.app.queue.RETRIES``, about a
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


@contextlib.contextmanager
def lease(rt: Runtime, name: str) -> Iterator[None]:
    """Hold the lease on ``name`` (``bot.app.store.acquire_lock``) while the block runs,
    renewing it from a thread every :data:`LOCK_RENEW` seconds.

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


def _lock_name(rt: Runtime, event: Event, request: FactRequest) -> str:
    """The lease a delivery's job takes: its PR (``owner/repo#N``: from the payload, else from
    the stored run the event is about), else its repository."""
    repo = event.repository or "-"
    number = request.pr_number
    if number is None:
        with rt.db.session() as session:
            key = request.run_key or (request.keyed_runs[0] if request.keyed_runs else None)
            row = app_store.get_run(session, key) if key else None
            if row is None and request.workflow_run_id is not None:
                row = app_store.run_for_workflow(session, repo, request.workflow_run_id) or (
                    app_store.get_run(session, request.dispatched_key) if request.dispatched_key else None)
            if row is None and request.head_sha:
                runs = app_store.runs_at_head(session, repo, request.head_sha)
                row = runs[-1] if runs else None
            number = row.pr_number if row is not None and row.repository == repo else None
    return f"{repo}#{number}" if number is not None else repo


def _remember_visibility(rt: Runtime, event: Event, received_at: _dt.datetime) -> None:
    """Record whether the repositories of a (signed) delivery received at ``received_at`` are
    public (who may read the pages depends on it, ``bot.app.access``); only newer evidence moves
    a recorded visibility, and towards public only a newer ``repository publicized``
    (``bot.app.store.record_visibility``), so the delivery's retries and the sweep may run this
    again in any order."""
    found = access.visibility(event.data)
    publicized = event.name == "repository" and event.action == "publicized"
    if found:
        with rt.db.session() as session, session.begin():
            for name, private in sorted(found.items()):
                if is_repository_name(name):
                    app_store.record_visibility(session, name, private, received_at,
                                                publicized=publicized and name == event.repository)


def _finish(rt: Runtime, delivery_id: str, status: str, error: str | None = None) -> None:
    with rt.db.session() as session, session.begin():
        app_store.finish_delivery(session, delivery_id, status, error)


def fetch_facts(rt: Runtime, client: InstallationClient | None, event: Event, request: FactRequest) -> Facts:
    """The :class:`bot.app.facts.Facts` that ``request`` (``bot.app.handlers.facts_for``) asks for,
    from the database and GitHub (GitHub only where asked; nothing that needs GitHub without a
    client)."""
    repo = event.repository
    if not repo or (request.needs_github and client is None):
        return Facts()
    found: dict[str, Any] = {"public_url": rt.settings.public_url, "github_url": rt.settings.github_url}
    if request.config:
        config = config_of(client, repo, event.data)
        found["label"], found["runners"] = config.label, config.runners
    if request.permission_of is not None:
        found["permission"] = client.permission(repo, request.permission_of)
    number = request.pr_number
    with rt.db.session() as session:
        if number is not None:
            found["runs"] = tuple(app_store.run_info(r) for r in app_store.runs_of_pull(session, repo, number))
            if request.approved_sha:
                stored = app_store.get_pull(session, repo, number)
                found["approved_sha"] = stored.approved_sha if stored else None
            if request.refusal_of:
                found["refused_before"] = app_store.refused_before(session, repo, number, request.refusal_of)
        if request.comment_id is not None:
            found["last_command"] = app_store.last_command(session, repo, request.comment_id)
        if request.workflow_run_id is not None:
            row = app_store.run_for_workflow(session, repo, request.workflow_run_id)
            if row is None and request.dispatched_key \
                    and request.workflow_path == f".github/workflows/{rt.settings.workflow}":
                row = app_store.get_run(session, request.dispatched_key)
                if row is None or row.repository != repo or row.workflow_run_id is not None or \
                        row.status not in ("queued", "in_progress"):
                    row = None
            found["run"] = app_store.run_info(row) if row else None
        if request.run_key is not None:
            row = app_store.get_run(session, request.run_key)
            if row is None or row.repository != repo:
                return Facts()
            found["run"] = app_store.run_info(row)
            found["runs"] = tuple(app_store.run_info(r) for r in app_store.runs_of_pull(session, repo, row.pr_number)) \
                if row.pr_number is not None else ()
        if request.head_sha:
            found["runs"] = tuple(app_store.run_info(r) for r in app_store.runs_at_head(session, repo, request.head_sha))
        if request.issue_number is not None:
            row = app_store.regression_of_issue(session, repo, request.issue_number)
            found["regression"] = app_store.regression_info(row) if row is not None else None
        if request.keyed_runs:
            rows = [app_store.get_run(session, key) for key in request.keyed_runs]
            found["runs"] = tuple(app_store.run_info(row) for row in rows if row)
    if request.pull_if_permitted and number is not None and may_command(found.get("permission")):
        pull = client.pull(repo, number)
        with rt.db.session() as session:
            stored = app_store.get_pull(session, repo, number)
            found["pull"] = pull
            found["head_seen_at"] = stored.head_seen_at if stored is not None and stored.head_sha == pull.head_sha \
                else None
            found["concluded"] = _concluded_before(session, repo, number, request.concluded_before)
    return Facts(**found)


def _concluded_before(session, repo: str, number: int, moment) -> ConcludedRun | None:
    """The PR's newest run whose results were reported before ``moment`` (what a comment
    written then could have seen), with the benchmarks that regressed in it."""
    run = app_store.latest_concluded_run(session, repo, number, before=moment) if moment is not None else None
    if run is None:
        return None
    doc = session.get(Result, run.result_id).document
    regressed = tuple(sorted({str(b.get("name")) for b in doc.get("benchmarks", []) if verdict_of(b) == "regression"}))
    return ConcludedRun(run.key, run.head_sha, regressed)


def config_of(client: InstallationClient, repo: str, data: dict | None = None) -> Config:
    """The target's config from its default branch (a PR cannot change its own trigger, runner
    groups or webhook); ``data``: the delivery's payload (its ``repository.default_branch``)."""
    branch = ((data or {}).get("repository") or {}).get("default_branch")
    try:
        return config_from_texts(client.config_texts(repo, branch), f"{repo}@{branch or 'default branch'}")[0]
    except GitHubError as exc:
        if exc.transient:  # GitHub did not answer: the retry reads it, never the defaults by mistake
            raise
        log.warning("%s: cannot read the perfgate config (%s); using the defaults", repo, exc.detail)
    except ConfigError as exc:  # a broken file is the compare's to report, on the runner
        log.info("%s: the perfgate config is broken (%s); using the defaults", repo, exc)
    return Config()


# -- actions ------------------------------------------------------------------------------------
def execute(rt: Runtime, client: InstallationClient | None, action: Action) -> None:
    """Carry out one action (``client`` may be None only for storage actions)."""
    handler = _HANDLERS[type(action)]
    handler(rt, client, action)


def _save_pull(rt: Runtime, client, a: SavePull) -> None:
    with rt.db.session() as session, session.begin():
        app_store.save_pull(session, a.repository, a.number, a.changes)


def _save_installation(rt: Runtime, client, a: SaveInstallation) -> None:
    with rt.db.session() as session, session.begin():
        app_store.save_installation(session, a.installation_id, a.account, a.active)


def _record_merge(rt: Runtime, client, a: RecordMerge) -> None:
    from ..history.core import parse_time

    with rt.db.session() as session, session.begin():
        repo = history_store.get_or_create_repository(session, a.repository)
        history_store.record_pull_request(session, repo, a.number, url=a.url, title=a.title, head_sha=a.head_sha,
                                          merge_sha=a.merge_sha, merged_at=parse_time(a.merged_at))


def _remember_command(rt: Runtime, client, a: RememberCommand) -> None:
    with rt.db.session() as session, session.begin():
        app_store.remember_command(session, a.repository, a.comment_id, a.text, a.login)


def _remember_refusal(rt: Runtime, client, a: RememberRefusal) -> None:
    with rt.db.session() as session, session.begin():
        app_store.remember_refusal(session, a.repository, a.pr_number, a.login)


def _upsert_comment(rt: Runtime, client: InstallationClient, a: UpsertComment) -> None:
    with rt.db.session() as session:
        pull = app_store.get_pull(session, a.repository, a.pr_number)
        known = pull.comment_id if pull else None
    comment_id = client.upsert_sticky(a.repository, a.pr_number, a.body, known)
    if comment_id != known:
        with rt.db.session() as session, session.begin():
            app_store.save_pull(session, a.repository, a.pr_number, {"comment_id": comment_id})


def _reply(rt: Runtime, client: InstallationClient, a: Reply) -> None:
    _post_reply(client, a.repository, a.pr_number, a.body)


def _post_reply(client: InstallationClient, repo: str, number: int, body: str) -> None:
    """Post a new comment, once: within a delivery's job it carries a hidden mark of the
    delivery and step, and a resumed step first looks for a comment with that mark."""
    step = _STEP.get()
    if step is None:
        client.reply(repo, number, body)
        return
    digest = hashlib.sha256(step.delivery_id.encode("utf-8", "replace")).hexdigest()[:20]
    mark = f"<!-- perfgate-reply {digest}/{step.index} -->"
    if step.resume and client.find_reply(repo, number, mark) is not None:
        log.info("%s#%s: the reply of step %d was posted before; not again", repo, number, step.index + 1)
        return
    client.reply(repo, number, f"{body}\n\n{mark}")


def _react(rt: Runtime, client: InstallationClient, a: React) -> None:
    try:
        client.react(a.repository, a.pr_number, a.comment_id, a.content)
    except GitHubError as exc:  # a reaction is a courtesy: never fail the job for it
        log.warning("%s#%s: reaction %s failed: %s", a.repository, a.pr_number, a.content, exc.detail)


def _reply_history(rt: Runtime, client: InstallationClient, a: ReplyHistory) -> None:
    with rt.db.session() as session:
        body = history_store.history_reply_markdown(session, a.repository, a.benchmark, rt.settings.public_url)
    _post_reply(client, a.repository, a.pr_number, body)


def _start_run(rt: Runtime, client: InstallationClient, a: StartRun) -> None:
    """Store the run, open its check run, dispatch its workflow, announce it — each step
    recorded on the run, so a resumed job (``Step.resume``) does only the steps left."""
    spec = a.spec
    step = _STEP.get()
    with rt.db.session() as session, session.begin():
        row = app_store.insert_run(session, spec)
        created = row is not None
        row = row or app_store.get_run(session, spec.key)
        status, check_id, started, dispatched_at = row.status, row.check_run_id, row.dispatch_started_at, \
            row.dispatched_at
    if not created and not (step and step.resume):
        log.info("run %s exists; not starting it again", spec.key)
        return
    if status not in ACTIVE_STATES:
        return
    details = rt.details_url(spec.key)
    if check_id is None and spec.group and spec.group != spec.key:
        with rt.db.session() as session, session.begin():  # one request, one check run (its first run's)
            first = app_store.get_run(session, spec.group)
            check_id = first.check_run_id if first is not None else None
            if check_id is not None:
                app_store.update_run(session, spec.key, check_run_id=check_id)
    if check_id is None:
        try:
            check_id = None if created else client.find_check_run(
                spec.repository, name=messages.CHECK_NAME, head_sha=spec.head_sha, external_id=spec.key)
            if check_id is None:
                check_id = client.create_check_run(spec.repository, name=messages.CHECK_NAME, head_sha=spec.head_sha,
                                                   external_id=spec.key, details_url=details,
                                                   **conclude.queued_check_run(spec))
        except GitHubError as exc:
            if not exc.transient:  # refused: nothing is on GitHub; the retry starts the run afresh
                with rt.db.session() as session, session.begin():
                    app_store.delete_run(session, spec.key)
            raise  # else it may exist: the resumed step looks for it first
        with rt.db.session() as session, session.begin():
            app_store.update_run(session, spec.key, check_run_id=check_id)
    if dispatched_at is None:
        dispatched = client.find_dispatched(spec.repository, rt.settings.workflow, f"perfgate {spec.key}",
                                            since=started) if started is not None else None
        if dispatched is None:
            with rt.db.session() as session, session.begin():
                app_store.update_run(session, spec.key, dispatch_started_at=utc_now())
            try:
                ref = spec.workflow_ref or client.default_branch(spec.repository)
                if spec.kind == "pr":
                    spec = dataclasses.replace(spec, force_run=_selection_misses(rt, spec.repository))
                dispatched = client.dispatch_workflow(spec.repository, rt.settings.workflow, ref, dispatch_inputs(spec))
            except GitHubError as exc:
                if exc.transient and not (step and step.last_try):
                    raise  # it may have gone through: the retry looks for the run first
                log.warning("run %s: dispatch failed: %s", spec.key, exc.detail)
                _carry_out(rt, client, conclude.dispatch_failed(spec, check_id, workflow=rt.settings.workflow,
                                                                error=str(exc)))
                return
        with rt.db.session() as session, session.begin():
            app_store.update_run(session, spec.key, dispatched_at=utc_now(), workflow_run_id=dispatched.run_id,
                                 workflow_run_url=rt.github_link(dispatched.html_url))
    with rt.db.session() as session:
        workflow_url = app_store.get_run(session, spec.key).workflow_run_url
    _carry_out(rt, client, conclude.dispatched(spec, details_url=details, workflow_url=workflow_url))


def _cancel_run(rt: Runtime, client: InstallationClient, a: CancelRun) -> None:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
    if run is None or run.status not in ("queued", "in_progress"):
        return
    if run.workflow_run_id:
        client.cancel_workflow_run(run.repository, run.workflow_run_id)
    if run.check_run_id:
        client.update_check_run(run.repository, run.check_run_id, status="completed", conclusion="cancelled",
                                title="Cancelled", summary=a.reason)
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, a.key, status="cancelled", conclusion="cancelled", headline=a.reason[:500])


def _accept(rt: Runtime, client: InstallationClient, a: AcceptRegression) -> None:
    step = _STEP.get()
    with rt.db.session() as session, session.begin():
        # A resumed step may have stored its accepts before it stopped: never twice.
        known = {(x["pr_number"], x["sha"], x["benchmark"], x["user"], x["reason"])
                 for x in history_store.accepts_of(session, a.repository)} if step and step.resume else set()
        for benchmark in a.benchmarks:
            if (a.pr_number, a.sha, benchmark, a.user, a.reason) not in known:
                history_store.record_accept(session, a.repository, user=a.user, pr_number=a.pr_number, sha=a.sha,
                                            benchmark=benchmark, reason=a.reason)
        run = app_store.latest_concluded_run(session, a.repository, a.pr_number)
    if run is not None and run.result_id is not None:
        _conclude(rt, client, run, workflow_url=run.workflow_run_url)


def _mark_in_progress(rt: Runtime, client: InstallationClient, a: MarkInProgress) -> None:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
        if run is None or run.status != "queued":
            return
    workflow_url = rt.github_link(a.workflow_url)
    if run.check_run_id:  # GitHub first: a retry finds the run still queued and does both
        client.update_check_run(run.repository, run.check_run_id, status="in_progress",
                                title="Benchmarking on a GPU runner",
                                summary=f"The workflow run started: {workflow_url or 'see the Actions tab'}.")
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, a.key, status="in_progress", workflow_run_url=workflow_url or run.workflow_run_url)


def _ingest(rt: Runtime, client: InstallationClient, a: Ingest) -> None:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
    if run is None or run.status not in ("queued", "in_progress"):
        return
    workflow_url = rt.github_link(a.workflow_url)
    with rt.db.session() as session, session.begin():
        run = app_store.update_run(session, a.key, workflow_run_url=workflow_url or run.workflow_run_url)
    if run.result_id is not None:  # stored before the job stopped: conclude, do not download again
        _conclude(rt, client, run, workflow_url=workflow_url)
        return
    try:
        artifact = ingest.results_artifact(client.artifacts(run.repository, a.workflow_run_id), run.key,
                                           rt.settings.artifact_limit)
        data = client.download(artifact.archive_download_url, rt.settings.artifact_limit)
        doc = ingest.prepare(data, run_id=run.key, head_sha=run.head_sha, kind=run.kind, repository=run.repository,
                             pr_number=run.pr_number, github_url=rt.settings.github_url,
                             workflow_url=workflow_url, details_url=rt.details_url(run.key) or workflow_url,
                             runner=run.runner)
    except GitHubError as exc:
        step = _STEP.get()
        if exc.transient and not (step and step.last_try):
            raise  # GitHub may answer the retry: the results may well be there
        log.warning("run %s: no results: %s", run.key, exc.detail)
        _fail_run(rt, client, run, a.workflow_conclusion, workflow_url, md_text(str(exc)))
        return
    except ingest.IngestError as exc:
        log.info("run %s: no results: %s", run.key, exc)
        _fail_run(rt, client, run, a.workflow_conclusion, workflow_url, str(exc))
        return
    with rt.db.session() as session, session.begin():
        skipped = [s.get("name") for s in (doc.get("selection") or {}).get("skipped") or []]
        if skipped:  # benchmarks the PR could not affect: their last default-branch values, carried forward
            key = history_core.fingerprint_of(doc.get("environment") or {}).key
            doc = history_core.carry_forward(doc, history_store.latest_main_points(session, run.repository,
                                                                                   skipped, key))
        outcome = history_store.add_result(session, doc, repository=run.repository, validated=True)  # by prepare
        app_store.update_run(session, run.key, result_id=outcome.result_id)
        run = app_store.get_run(session, run.key)
    _conclude(rt, client, run, workflow_url=workflow_url)


def _selection_misses(rt: Runtime, repository: str) -> tuple[str, ...]:
    """The benchmarks a PR compare must run whatever its selection says: the selection misses of
    the repository's tracked regressions (``regressions.selection_misses``), sorted."""
    with rt.db.session() as session:
        tracked = []
        for row in app_store.regressions_of(session, repository):
            if row.status == "closed" or not row.culprit_sha:
                continue
            pr = history_store.pull_request_of_commit(session, repository, row.culprit_sha)
            doc = history_store.latest_pr_document(session, repository, pr) if pr is not None else None
            tracked.append((row.benchmark, row.status, pr, doc))
    return tuple(sorted(regressions.selection_misses(tracked)))


def _conclude(rt: Runtime, client: InstallationClient, run: Run, *, workflow_url: str | None) -> None:
    """(Re)write the comment and the check run of a run with stored results."""
    with rt.db.session() as session:
        doc = session.get(Result, run.result_id).document
        # An accept covers the head it was given for (and its benchmarks), never a later push.
        accepts = [a for a in history_store.accepts_of(session, run.repository)
                   if a["pr_number"] == run.pr_number and a["sha"] == run.head_sha] if run.pr_number is not None else []
        notes = history_store.regression_history_notes(session, run.repository, doc, rt.settings.public_url)
    if run.kind == "bisect":
        tracking.conclude_bisect(rt, client, app_store.run_info(run), doc, _carry_out)  # its run's row last
        return
    config = config_of(client, run.repository)
    _finish_run(rt, client, run, conclude.concluded(
        app_store.run_info(run), doc, fail_threshold=config.fail_threshold, accepts=accepts, notes=notes,
        details_url=rt.details_url(run.key) or rt.github_link(workflow_url), run_page_url=rt.details_url(run.key),
        fail_on_memory=config.fail_on_memory_regression), config=config, doc=doc)


def _finish_run(rt: Runtime, client: InstallationClient | None, run: Run, actions: list[Action], *,
                config: Config | None = None, doc: dict | None = None, problem: str | None = None) -> None:
    """Carry out what ends ``run`` (``actions`` from ``bot.app.conclude``), what follows from it —
    its group's check run and comment (a run of several runner groups: the check run and comment
    are the group's, :func:`_conclude_group`), the default branch's regressions after a history
    result (``doc``), its regression after a failed bisect (``problem``) — and its own row last:
    a job that stops on the way finds the run still active when it runs again, and does the rest."""
    ended = next((a.changes for a in actions if isinstance(a, UpdateRun)), {})
    if client is not None:
        _carry_out(rt, client, [a for a in actions if not isinstance(a, UpdateRun) and not run.group_key])
        if run.group_key:
            _conclude_group(rt, client, run, config, ended=ended)
        if run.kind == "history" and doc is not None:
            tracking.follow_history(rt, client, app_store.run_info(run), doc, config or config_of(client, run.repository),
                                    _carry_out)
        if run.kind == "bisect" and problem is not None:
            tracking.bisect_failed(rt, client, app_store.run_info(run), problem, _carry_out)
    _carry_out(rt, None, [a for a in actions if isinstance(a, UpdateRun)])


def _conclude_group(rt: Runtime, client: InstallationClient, run: Run, config: Config | None = None, *,
                    ended: dict | None = None) -> None:
    """(Re)write the shared check run and comment of ``run``'s group (``conclude.group_concluded``),
    with ``run`` as ``ended`` leaves it (its row is written after)."""
    with rt.db.session() as session:
        rows = app_store.runs_of_group(session, run.group_key)
        docs = {r.key: session.get(Result, r.result_id).document for r in rows if r.result_id is not None}
        accepts = [a for a in history_store.accepts_of(session, run.repository)
                   if a["pr_number"] == run.pr_number and a["sha"] == run.head_sha] if run.pr_number is not None else []
        notes = {key: history_store.regression_history_notes(session, run.repository, doc, rt.settings.public_url)
                 for key, doc in docs.items()}
    fields = {k: v for k, v in (ended or {}).items() if k in ("status", "conclusion", "headline")}
    infos = [dataclasses.replace(app_store.run_info(r), **fields) if r.key == run.key else app_store.run_info(r)
             for r in rows]
    config = config or config_of(client, run.repository)
    _carry_out(rt, client, conclude.group_concluded(
        infos, docs, fail_threshold=config.fail_threshold, accepts=accepts, notes=notes,
        details_url=rt.details_url(run.key), run_page_url=rt.details_url(rows[0].key),
        fail_on_memory=config.fail_on_memory_regression))


def _fail_run(rt: Runtime, client: InstallationClient, run: Run, workflow_conclusion: str | None,
              workflow_url: str | None, problem: str) -> None:
    _finish_run(rt, client, run, conclude.failed(app_store.run_info(run), workflow_conclusion=workflow_conclusion,
                                                 workflow_url=workflow_url, problem=problem), problem=problem)


def _carry_out(rt: Runtime, client: InstallationClient | None, actions: list[Action]) -> None:
    for action in actions:
        execute(rt, client, action)


def _update_run(rt: Runtime, client, a: UpdateRun) -> None:
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, a.key, **a.changes)


def _update_check_run(rt: Runtime, client: InstallationClient, a: UpdateCheckRun) -> None:
    client.update_check_run(a.repository, a.check_run_id, **a.fields)


_HANDLERS: dict[type, Callable[[Runtime, Any, Any], None]] = {
    SavePull: _save_pull, SaveInstallation: _save_installation, RecordMerge: _record_merge,
    RememberCommand: _remember_command, RememberRefusal: _remember_refusal, UpsertComment: _upsert_comment,
    Reply: _reply, React: _react, ReplyHistory: _reply_history, StartRun: _start_run, CancelRun: _cancel_run,
    AcceptRegression: _accept, MarkInProgress: _mark_in_progress, Ingest: _ingest, UpdateRun: _update_run,
    UpdateCheckRun: _update_check_run, **tracking.HANDLERS,
}


# -- periodic -----------------------------------------------------------------------------------
#: The sweep enqueues again deliveries whose work was lost: queued for longer than
#: ``SWEEP_STALE`` or failed, received within ``SWEEP_WITHIN`` (so a delivery that fails for
#: good is retried at most every sweep for that long, never forever).
SWEEP_STALE, SWEEP_WITHIN = _dt.timedelta(minutes=15), _dt.timedelta(hours=6)


def lost_deliveries(rt: Runtime, now=None, stale_after: _dt.timedelta = SWEEP_STALE) -> list[str]:
    """The deliveries to process again (``bot.app.store.lost_deliveries``: failed, or queued
    for longer than ``stale_after``), marked ``queued``."""
    now = now or utc_now()
    with rt.db.session() as session, session.begin():
        found = app_store.lost_deliveries(session, now, stale_after, SWEEP_WITHIN)
        for delivery_id in found:
            app_store.retry_delivery(session, delivery_id, now, stale_after)
    return found


def forget_deliveries(rt: Runtime, now=None) -> int:
    """Delete the deliveries received more than ``PERFGATE_DELIVERY_RETENTION`` ago whose work
    ended (``bot.app.store.delete_old_deliveries``). Returns how many."""
    now = now or utc_now()
    with rt.db.session() as session, session.begin():
        return app_store.delete_old_deliveries(session, now - _dt.timedelta(seconds=rt.settings.delivery_retention))


def expire_runs(rt: Runtime, now=None) -> list[str]:
    """Mark runs that never reported back within ``PERFGATE_RUN_TIMEOUT`` as timed out (check
    run ``timed_out``, comment updated). Returns their keys.

    Each run is re-read under its PR's lease (the jobs that conclude runs hold it too), so a run
    concluded in the meantime is left as it is, and one whose results are stored (concluding them
    on GitHub failed) is concluded from them, never timed out; a run whose PR is busy waits for
    the next sweep.
    """
    now = now or utc_now()
    with rt.db.session() as session:
        stale = [(run.key, run.repository, run.pr_number)
                 for run in app_store.expired(app_store.active_runs(session), now, rt.settings.run_timeout)]
    done = []
    for key, repository, number in stale:
        try:
            with lease(rt, f"{repository}#{number}" if number is not None else repository):
                with rt.db.session() as session:
                    run = app_store.get_run(session, key)
                if run is None or run.status not in ACTIVE_STATES:
                    continue
                if run.result_id is not None:  # results are stored; only concluding them failed
                    _conclude(rt, rt.client_for(run.installation_id), run, workflow_url=run.workflow_run_url)
                else:
                    _time_out(rt, run)
        except GitHubError as exc:
            log.warning("run %s: could not conclude its stored results: %s", key, exc.detail)
            continue
        except Busy:
            continue
        done.append(key)
    return done


def _time_out(rt: Runtime, run: Run) -> None:
    actions = conclude.timed_out(app_store.run_info(run), timeout_hours=rt.settings.run_timeout / 3600,
                                 workflow_url=rt.github_link(run.workflow_run_url))
    problem = f"it did not report back within {rt.settings.run_timeout / 3600:g} h"
    try:
        client = rt.client_for(run.installation_id) if run.installation_id else None
        _finish_run(rt, client, run, actions, problem=problem)
    except GitHubError as exc:  # recorded as timed out all the same (its row was the last step)
        log.warning("run %s: could not report the time-out: %s", run.key, exc.detail)
        _carry_out(rt, None, [a for a in actions if isinstance(a, UpdateRun)])
