"""The background job (imperative shell): a stored delivery → the facts its handler declares
(``bot.app.handlers.facts_for``) → ``bot.app.handlers.decide`` →
actions carried out against the database and GitHub; plus result ingestion and the
time-out sweep.

Runs in the Huey consumer (``perfgate worker``), never in the webhook request. Every step is
idempotent so a Huey retry of the same delivery does not double anything: runs are keyed
(``StartRun`` skips a known key), the sticky comment is edited in place, reactions are
idempotent on GitHub's side.
"""

from __future__ import annotations

import datetime as _dt

import logging
from dataclasses import dataclass
from typing import Any, Callable

from runner.config import Config
from runner.config import from_texts as config_from_texts
from runner.errors import ConfigError, UserError
from runner.results import verdict_of
from runner.report.escape import md_text, safe_link

from ..db import Database, utc_now
from ..history import store as history_store
from ..history.core import is_repository_name
from ..history.tables import Result
from ..settings import Settings
from . import access, conclude, handlers, ingest, messages
from . import store as app_store
from .actions import (AcceptRegression, Action, CancelRun, Ingest, MarkInProgress, React, RecordMerge, RememberCommand,
                      RememberRefusal, Reply, ReplyHistory, SaveInstallation, SavePull, StartRun, UpdateCheckRun,
                      UpdateRun, UpsertComment, dispatch_inputs)
from .events import Event
from .facts import ConcludedRun, FactRequest, Facts, may_command
from .gateway import GitHubError, InstallationClient
from .tables import Run

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
def handle_delivery(rt: Runtime, delivery_id: str) -> list[Action]:
    """Process one stored delivery. Returns the actions carried out (for logs and tests).

    A failure is recorded on the delivery (``failed`` + the error) and re-raised, so Huey
    may retry the job; decisions already carried out are skipped on the retry.
    """
    with rt.db.session() as session:
        row = app_store.get_delivery(session, delivery_id)
        if row is None:
            log.warning("delivery %s is not stored", delivery_id)
            return []
        event = Event(row.event, row.delivery_id, dict(row.payload), row.action)
    _remember_visibility(rt, event)
    if not handlers.handled(event.name, event.action):
        _finish(rt, delivery_id, "ignored")
        return []
    try:
        client = rt.client_for(event.installation_id) if event.installation_id else None
        facts = fetch_facts(rt, client, event, handlers.facts_for(event))
        actions = handlers.decide(event, facts)
        if actions and client is None and any(not isinstance(a, SaveInstallation) for a in actions):
            raise UserError(f"{event.name} delivery without an installation id")
        for action in actions:
            execute(rt, client, action)
    except Exception as exc:
        _finish(rt, delivery_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    _finish(rt, delivery_id, "done")
    return actions


def _remember_visibility(rt: Runtime, event: Event) -> None:
    """Record whether the repositories of a (signed) delivery are public: who may read the
    pages depends on it (``bot.app.access``)."""
    found = access.visibility(event.data)
    if found:
        with rt.db.session() as session, session.begin():
            for name, private in found.items():
                if is_repository_name(name):
                    history_store.set_visibility(session, name, private)


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
    found: dict[str, Any] = {}
    if request.config:
        found["label"] = _config(client, repo, event.data).label
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


def _config(client: InstallationClient, repo: str, data: dict) -> Config:
    """The target's config from its default branch (a PR cannot change its own trigger)."""
    branch = (data.get("repository") or {}).get("default_branch")
    try:
        return config_from_texts(client.config_texts(repo, branch), f"{repo}@{branch or 'default branch'}")[0]
    except GitHubError as exc:
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
    client.reply(a.repository, a.pr_number, a.body)


def _react(rt: Runtime, client: InstallationClient, a: React) -> None:
    try:
        client.react(a.repository, a.pr_number, a.comment_id, a.content)
    except GitHubError as exc:  # a reaction is a courtesy: never fail the job for it
        log.warning("%s#%s: reaction %s failed: %s", a.repository, a.pr_number, a.content, exc.detail)


def _reply_history(rt: Runtime, client: InstallationClient, a: ReplyHistory) -> None:
    with rt.db.session() as session:
        body = history_store.history_reply_markdown(session, a.repository, a.benchmark, rt.settings.public_url)
    client.reply(a.repository, a.pr_number, body)


def _start_run(rt: Runtime, client: InstallationClient, a: StartRun) -> None:
    spec = a.spec
    with rt.db.session() as session, session.begin():
        if app_store.insert_run(session, spec) is None:
            log.info("run %s exists; not starting it again", spec.key)
            return
    details = rt.details_url(spec.key)
    try:
        check_id = client.create_check_run(spec.repository, name=messages.CHECK_NAME, head_sha=spec.head_sha,
                                           external_id=spec.key, details_url=details, **conclude.queued_check_run(spec))
    except GitHubError:
        # Nothing happened on GitHub yet: forget the run so a retry of this job starts it afresh.
        with rt.db.session() as session, session.begin():
            app_store.delete_run(session, spec.key)
        raise
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, spec.key, check_run_id=check_id)
    try:
        ref = spec.workflow_ref or client.default_branch(spec.repository)
        dispatched = client.dispatch_workflow(spec.repository, rt.settings.workflow, ref, dispatch_inputs(spec))
    except GitHubError as exc:
        log.warning("run %s: dispatch failed: %s", spec.key, exc.detail)
        _carry_out(rt, client, conclude.dispatch_failed(spec, check_id, workflow=rt.settings.workflow, error=str(exc)))
        return
    workflow_url = rt.github_link(dispatched.html_url)
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, spec.key, workflow_run_id=dispatched.run_id, workflow_run_url=workflow_url)
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
    with rt.db.session() as session, session.begin():
        for benchmark in a.benchmarks:
            history_store.record_accept(session, a.repository, user=a.user, pr_number=a.pr_number, sha=a.sha,
                                        benchmark=benchmark, reason=a.reason)
        run = app_store.latest_concluded_run(session, a.repository, a.pr_number)
    if run is not None and run.result_id is not None:
        _conclude(rt, client, run, workflow_url=run.workflow_run_url)


def _mark_in_progress(rt: Runtime, client: InstallationClient, a: MarkInProgress) -> None:
    with rt.db.session() as session, session.begin():
        run = app_store.get_run(session, a.key)
        if run is None or run.status != "queued":
            return
        workflow_url = rt.github_link(a.workflow_url)
        app_store.update_run(session, a.key, status="in_progress", workflow_run_url=workflow_url or run.workflow_run_url)
        check_id, repo = run.check_run_id, run.repository
    if check_id:
        client.update_check_run(repo, check_id, status="in_progress", title="Benchmarking on a GPU runner",
                                summary=f"The workflow run started: {workflow_url or 'see the Actions tab'}.")


def _ingest(rt: Runtime, client: InstallationClient, a: Ingest) -> None:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
    if run is None or run.status not in ("queued", "in_progress"):
        return
    workflow_url = rt.github_link(a.workflow_url)
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, a.key, workflow_run_url=workflow_url or run.workflow_run_url)
    try:
        artifact = ingest.results_artifact(client.artifacts(run.repository, a.workflow_run_id), run.key,
                                           rt.settings.artifact_limit)
        data = client.download(artifact.archive_download_url, rt.settings.artifact_limit)
        doc = ingest.prepare(data, run_id=run.key, head_sha=run.head_sha, kind=run.kind, repository=run.repository,
                             pr_number=run.pr_number, github_url=rt.settings.github_url,
                             workflow_url=workflow_url, details_url=rt.details_url(run.key) or workflow_url)
    except GitHubError as exc:
        log.warning("run %s: no results: %s", run.key, exc.detail)
        _fail_run(rt, client, run, a.workflow_conclusion, workflow_url, md_text(str(exc)))
        return
    except ingest.IngestError as exc:
        log.info("run %s: no results: %s", run.key, exc)
        _fail_run(rt, client, run, a.workflow_conclusion, workflow_url, str(exc))
        return
    with rt.db.session() as session, session.begin():
        outcome = history_store.add_result(session, doc, repository=run.repository)
        app_store.update_run(session, run.key, result_id=outcome.result_id)
        run = app_store.get_run(session, run.key)
    _conclude(rt, client, run, workflow_url=workflow_url)


def _conclude(rt: Runtime, client: InstallationClient, run: Run, *, workflow_url: str | None) -> None:
    """(Re)write the comment and the check run of a run with stored results."""
    with rt.db.session() as session:
        doc = session.get(Result, run.result_id).document
        # An accept covers the head it was given for (and its benchmarks), never a later push.
        accepts = [a for a in history_store.accepts_of(session, run.repository)
                   if a["pr_number"] == run.pr_number and a["sha"] == run.head_sha] if run.pr_number is not None else []
        notes = history_store.regression_history_notes(session, run.repository, doc, rt.settings.public_url)
    config = _config(client, run.repository, {})
    _carry_out(rt, client, conclude.concluded(
        app_store.run_info(run), doc, fail_threshold=config.fail_threshold, accepts=accepts, notes=notes,
        details_url=rt.details_url(run.key) or rt.github_link(workflow_url), run_page_url=rt.details_url(run.key)))


def _fail_run(rt: Runtime, client: InstallationClient, run: Run, workflow_conclusion: str | None,
              workflow_url: str | None, problem: str) -> None:
    _carry_out(rt, client, conclude.failed(app_store.run_info(run), workflow_conclusion=workflow_conclusion,
                                           workflow_url=workflow_url, problem=problem))


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
    UpdateCheckRun: _update_check_run,
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


def expire_runs(rt: Runtime, now=None) -> list[str]:
    """Mark runs that never reported back within ``PERFGATE_RUN_TIMEOUT`` as timed out (check
    run ``timed_out``, comment updated). Returns their keys."""
    now = now or utc_now()
    with rt.db.session() as session:
        stale = app_store.expired(app_store.active_runs(session), now, rt.settings.run_timeout)
    done = []
    for run in stale:
        actions = conclude.timed_out(app_store.run_info(run), timeout_hours=rt.settings.run_timeout / 3600,
                                     workflow_url=rt.github_link(run.workflow_run_url))
        on_github = [a for a in actions if not isinstance(a, UpdateRun)]
        try:
            client = rt.client_for(run.installation_id) if run.installation_id else None
            if client is not None:
                _carry_out(rt, client, on_github)
        except GitHubError as exc:
            log.warning("run %s: could not report the time-out: %s", run.key, exc.detail)
        _carry_out(rt, None, [a for a in actions if isinstance(a, UpdateRun)])
        done.append(run.key)
    return done
