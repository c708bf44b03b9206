"""Carrying out actions (shell): :func:`execute` runs one ``bot.app.core.actions`` action against
the database and GitHub, then the follow-up actions its handler returns (a run's start announces it,
a result concludes it: ``bot.app.job.runs``); nothing here decides — what to do comes from the
core (``bot.app.core.handlers``, ``bot.app.core.conclude``, ``bot.app.core.regressions``), what to
do *again* after a stop from the retry mechanics (``bot.app.job.shell.resuming``).

The effects that create something on GitHub are idempotent under retries: the sticky comment is
found by its marker and edited, a reply carries a hidden mark of its delivery and step and a
resumed step looks for it first, reactions are idempotent on GitHub's side, cancelling a finished
workflow run is not an error.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from ...history import reads as history_reads
from ...history import store as history_store
from ...history.points import parse_time
from ..core import conclude
from . import runs, tracking
from ..store import store as app_store
from ..core.actions import (AcceptRegression, Action, CancelRun, CancelWorkflowRun, DeleteComment,
                            Ingest, MarkInProgress, React, RecordMerge, RememberCommand,
                            RememberRefusal, Reply, ReplyHistory, SaveInstallation, SavePull,
                            StartRun, UpdateCheckRun, UpdateRun, UpsertComment)
from ..github.gateway import InstallationClient
from ..github.github_errors import GitHubError
from .shell import STEP, Runtime, log, resuming


def execute(rt: Runtime, client: InstallationClient | None, action: Action) -> None:
    """Carry out one action, then the follow-ups its handler returns, in order (``client`` may
    be None only for storage actions).

    Raises:
        GitHubError, sqlalchemy errors: what the first failing effect raised (the job records it
            and its retry resumes at this action).
    """
    for follow in _HANDLERS[type(action)](rt, client, action) or ():
        execute(rt, client, follow)


def carry_out(rt: Runtime, client: InstallationClient | None, actions: list[Action]) -> None:
    """:func:`execute` each of ``actions`` in order."""
    for action in actions:
        execute(rt, client, action)


def _save_pull(rt: Runtime, client, a: SavePull) -> None:
    with rt.db.session() as session, session.begin():
        app_store.save_pull(session, a.repository, a.number, a.changes)


def _save_installation(rt: Runtime, client, a: SaveInstallation) -> None:
    with rt.db.session() as session, session.begin():
        app_store.save_installation(session, a.installation_id, a.account, a.active)


def _record_merge(rt: Runtime, client, a: RecordMerge) -> None:
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
        known = pull.comment_id if pull is not None else None
    comment_id = client.upsert_sticky(a.repository, a.pr_number, a.body, known)
    if comment_id != known:  # the comment the App edits from now on
        with rt.db.session() as session, session.begin():
            app_store.save_pull(session, a.repository, a.pr_number, {"comment_id": comment_id})


def _delete_comment(rt: Runtime, client: InstallationClient, a: DeleteComment) -> None:
    client.delete_comment(a.repository, a.pr_number, a.comment_id)


def _reply(rt: Runtime, client: InstallationClient, a: Reply) -> None:
    post_reply(client, a.repository, a.pr_number, a.body)


def post_reply(client: InstallationClient, repo: str, number: int, body: str) -> None:
    """Post a new comment, once: within a delivery's job it carries a hidden mark of the
    delivery and step, and a resumed step first looks for a comment with that mark."""
    step = STEP.get()
    if step is None:  # outside a delivery's job (the sweeps): no step to mark
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
        body = history_reads.history_reply_markdown(session, a.repository, a.benchmark,
                                                    rt.settings.public_url)
    post_reply(client, a.repository, a.pr_number, body)


def _cancel_run(rt: Runtime, client: InstallationClient, a: CancelRun) -> list[Action]:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
        info = app_store.run_info(run) if run is not None else None
    return conclude.cancel(info, a.reason)


def _cancel_workflow_run(rt: Runtime, client: InstallationClient, a: CancelWorkflowRun) -> None:
    client.cancel_workflow_run(a.repository, a.workflow_run_id)


def _mark_in_progress(rt: Runtime, client: InstallationClient, a: MarkInProgress) -> list[Action]:
    with rt.db.session() as session:
        run = app_store.get_run(session, a.key)
        info = app_store.run_info(run) if run is not None else None
    return conclude.in_progress(info, rt.github_link(a.workflow_url))


def _accept(rt: Runtime, client: InstallationClient, a: AcceptRegression) -> list[Action]:
    with rt.db.session() as session, session.begin():
        # A resumed step may have stored its accepts before it stopped: never twice.
        known = {(x["pr_number"], x["sha"], x["benchmark"], x["user"], x["reason"])
                 for x in history_reads.accepts_of(session, a.repository)} if resuming() else set()
        for benchmark in a.benchmarks:
            if (a.pr_number, a.sha, benchmark, a.user, a.reason) not in known:  # resume mechanics
                history_store.record_accept(session, a.repository, user=a.user, pr_number=a.pr_number, sha=a.sha,
                                            benchmark=benchmark, reason=a.reason)
        run = app_store.latest_concluded_run(session, a.repository, a.pr_number)
        info = app_store.run_info(run) if run is not None else None
    # the PR's newest run with stored results (the store's query), if it has one
    return runs.conclude_run(rt, client, info) if info is not None else []


def _update_run(rt: Runtime, client, a: UpdateRun) -> None:
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, a.key, **a.changes)


def _update_check_run(rt: Runtime, client: InstallationClient, a: UpdateCheckRun) -> None:
    client.update_check_run(a.repository, a.check_run_id, **a.fields)


_HANDLERS: dict[type, Callable[[Runtime, Any, Any], list[Action] | None]] = {
    SavePull: _save_pull, SaveInstallation: _save_installation, RecordMerge: _record_merge,
    RememberCommand: _remember_command, RememberRefusal: _remember_refusal, UpsertComment: _upsert_comment,
    Reply: _reply, React: _react, ReplyHistory: _reply_history, StartRun: runs.start_run, CancelRun: _cancel_run,
    CancelWorkflowRun: _cancel_workflow_run, DeleteComment: _delete_comment, AcceptRegression: _accept,
    MarkInProgress: _mark_in_progress, Ingest: runs.ingest_results, UpdateRun: _update_run,
    UpdateCheckRun: _update_check_run, **tracking.HANDLERS,
}
