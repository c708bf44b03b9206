"""A run's life on GitHub (shell): start it (its row, check run, dispatch), take in its results,
conclude it. Each function gathers what the core needs, asks the core (``bot.app.core.conclude``:
what ends a run comes out whole, what follows included), carries out what is GitHub's and the
database's at once where a retry must find it done, and returns the rest as follow-up actions,
which ``bot.app.job.effects.execute`` carries out in order. Besides I/O outcomes and the retry
mechanics it branches only on what a run records: its status, stored result, group and kind.

What a retry may repeat: every step is recorded on the run (its check run id, the start and end
of its dispatch, its result), so a resumed job (``bot.app.job.shell.resuming``) does only the steps
left, and looks first for what it may have created on GitHub (the check run by ``external_id``,
the workflow run by its name ``perfgate <run-id>``).
"""

from __future__ import annotations

import dataclasses

from runner.report.escape import md_text

from ...db import utc_now
from ...history import reads as history_reads
from ...history import store as history_store
from ...history.points import fingerprint_of
from ...history.series import carry_forward
from ..core import conclude, ingest, messages, regressions
from . import gather
from ..store import store as app_store
from ..core.actions import Action, Ingest, StartRun, dispatch_inputs
from ..core.facts import Conclusion, RunInfo
from ..github.gateway import InstallationClient
from ..github.github_errors import GitHubError
from .shell import Runtime, last_try, log, resuming


def start_run(rt: Runtime, client: InstallationClient, a: StartRun) -> list[Action]:
    """Store the run, open its check run, dispatch its workflow — each step recorded on the run,
    so a resumed job does only the steps left — and return its announcement
    (``bot.app.core.conclude.dispatched``, or ``dispatch_failed``)."""
    spec = a.spec
    with rt.db.session() as session, session.begin():
        row = app_store.insert_run(session, spec)
        created = row is not None
        row = row or app_store.get_run(session, spec.key)
        info = app_store.run_info(row)
        started, dispatched_at = row.dispatch_started_at, row.dispatched_at
    if not created and not resuming():  # resume mechanics: a second request for an existing run
        log.info("run %s exists; not starting it again", spec.key)
        return []
    if not info.active:  # resume mechanics: the run ended (cancelled) before the job came back
        return []
    check_id = info.check_run_id
    if check_id is None and spec.group not in (None, spec.key):  # a later run: its first run's
        check_id = _group_check_run(rt, spec)
    if check_id is None:
        check_id = _open_check_run(rt, client, spec, look_first=not created)
    workflow_url = info.workflow_url
    if dispatched_at is None:
        failed, workflow_url = _dispatch(rt, client, spec, check_id, started)
        if failed is not None:  # the dispatch failed for good (an I/O outcome)
            return failed
    return conclude.dispatched(spec, details_url=rt.details_url(spec.key), workflow_url=workflow_url)


def _group_check_run(rt: Runtime, spec: RunInfo) -> int | None:
    """The check run of ``spec``'s request (its first run's), recorded on this run too."""
    with rt.db.session() as session, session.begin():
        first = app_store.get_run(session, spec.group)
        check_id = first.check_run_id if first is not None else None
        if check_id is not None:
            app_store.update_run(session, spec.key, check_run_id=check_id)
    return check_id


def _open_check_run(rt: Runtime, client: InstallationClient, spec: RunInfo, *,
                    look_first: bool) -> int:
    """Create the run's check run — after a stop, first look for the one the stopped job may have
    created (``look_first``) — and record its id on the run.

    Raises:
        GitHubError: GitHub refused (the run's row is deleted: nothing is on GitHub, the retry
            starts afresh) or did not answer (it may exist: the resumed step looks first).
    """
    try:
        check_id = client.find_check_run(spec.repository, name=messages.CHECK_NAME, head_sha=spec.head_sha,
                                         external_id=spec.key) if look_first else None
        if check_id is None:
            check_id = client.create_check_run(spec.repository, name=messages.CHECK_NAME, head_sha=spec.head_sha,
                                               external_id=spec.key, details_url=rt.details_url(spec.key),
                                               **conclude.queued_check_run(spec))
    except GitHubError as exc:
        if not exc.transient:
            with rt.db.session() as session, session.begin():
                app_store.delete_run(session, spec.key)
        raise
    with rt.db.session() as session, session.begin():
        app_store.update_run(session, spec.key, check_run_id=check_id)
    return check_id


def _dispatch(rt: Runtime, client: InstallationClient, spec: RunInfo, check_id: int,
              started) -> tuple[list[Action] | None, str | None]:
    """Dispatch the run's workflow once (a stopped job's dispatch is looked for by its name from
    ``started`` on). Returns ``(None, the workflow run's page)`` when it is dispatched, else
    ``(the actions that report why it could not be, None)``.

    Raises:
        GitHubError: no answer (transient) before the job's last try: it may have gone through.
    """
    dispatched = client.find_dispatched(spec.repository, rt.settings.workflow, f"perfgate {spec.key}",
                                        since=started) if started is not None else None
    if dispatched is None:
        with rt.db.session() as session, session.begin():
            app_store.update_run(session, spec.key, dispatch_started_at=utc_now())
            if spec.kind == "pr":  # a PR compare's selection may skip what tracked culprits slowed
                spec = dataclasses.replace(spec, force_run=_selection_misses(session, spec.repository))
        try:
            ref = spec.workflow_ref if spec.workflow_ref is not None else client.default_branch(spec.repository)
            dispatched = client.dispatch_workflow(spec.repository, rt.settings.workflow, ref, dispatch_inputs(spec))
        except GitHubError as exc:
            if exc.transient and not last_try():
                raise  # it may have gone through: the retry looks for the run first
            log.warning("run %s: dispatch failed: %s", spec.key, exc.detail)
            return conclude.dispatch_failed(spec, check_id, workflow=rt.settings.workflow, error=str(exc)), None
    with rt.db.session() as session, session.begin():
        row = app_store.update_run(session, spec.key, dispatched_at=utc_now(), workflow_run_id=dispatched.run_id,
                                   workflow_run_url=rt.github_link(dispatched.html_url))
        return None, row.workflow_run_url


def selection_misses(rt: Runtime, repository: str) -> tuple[str, ...]:
    """The benchmarks a PR compare must run whatever its selection says: the selection misses of
    the repository's tracked regressions (``regressions.selection_misses``), sorted."""
    with rt.db.session() as session:
        return _selection_misses(session, repository)


def _selection_misses(session, repository: str) -> tuple[str, ...]:
    tracked = []
    for r in regressions.followed_culprits([app_store.regression_info(row)
                                            for row in app_store.regressions_of(session, repository)]):
        pr = history_reads.pull_request_of_commit(session, repository, r.culprit_sha)
        doc = history_reads.latest_pr_document(session, repository, pr) if pr is not None else None
        tracked.append((r.benchmark, r.status, pr, doc))
    return tuple(sorted(regressions.selection_misses(tracked)))


def ingest_results(rt: Runtime, client: InstallationClient, a: Ingest) -> list[Action]:
    """A dispatched workflow finished: download its results artifact, store it, conclude the run
    (or report why there are no results)."""
    workflow_url = rt.github_link(a.workflow_url)
    with rt.db.session() as session, session.begin():
        row = app_store.get_run(session, a.key)
        info = app_store.run_info(row) if row is not None else None
        if info is None or not info.active:  # cancelled, concluded or timed out meanwhile
            return []
        if workflow_url is not None:  # the payload's link (a checked GitHub page) replaces the stored one
            info = app_store.run_info(app_store.update_run(session, a.key, workflow_run_url=workflow_url))
    if info.has_results:  # resume mechanics: stored before the job stopped; conclude, do not download again
        return conclude_run(rt, client, info)
    try:
        artifact = ingest.results_artifact(client.artifacts(info.repository, a.workflow_run_id), info.key,
                                           rt.settings.artifact_limit)
        data = client.download(artifact.archive_download_url, rt.settings.artifact_limit)
        doc = ingest.prepare(data, run_id=info.key, head_sha=info.head_sha, kind=info.kind,
                             repository=info.repository, pr_number=info.pr_number, github_url=rt.settings.github_url,
                             workflow_url=workflow_url, details_url=rt.details_url(info.key) or workflow_url,
                             runner=info.runner)
    except GitHubError as exc:
        if exc.transient and not last_try():
            raise  # GitHub may answer the retry: the results may well be there
        log.warning("run %s: no results: %s", info.key, exc.detail)
        return fail_run(rt, client, info, a.workflow_conclusion, workflow_url, md_text(str(exc)))
    except ingest.IngestError as exc:
        log.info("run %s: no results: %s", info.key, exc)
        return fail_run(rt, client, info, a.workflow_conclusion, workflow_url, str(exc))
    with rt.db.session() as session, session.begin():
        skipped = [s.get("name") for s in (doc.get("selection") or {}).get("skipped") or []]
        if skipped:  # a query that would find nothing: benchmarks the PR could not affect, carried forward
            key = fingerprint_of(doc.get("environment") or {}).key
            doc = carry_forward(doc, history_reads.latest_main_points(session, info.repository,
                                                                      skipped, key))
        outcome = history_store.add_result(session, doc, repository=info.repository, validated=True)  # by prepare
        info = app_store.run_info(app_store.update_run(session, info.key, result_id=outcome.result_id))
    return conclude_run(rt, client, info)


def conclusion_facts(rt: Runtime, client: InstallationClient | None, run: RunInfo, *,
                     with_results: bool) -> Conclusion | None:
    """The facts concluding ``run`` needs (``bot.app.core.conclude.request_for``); None without a
    client when they include the configuration."""
    return gather.fetch_facts(rt, client, None, conclude.request_for(run, with_results=with_results),
                              repository=run.repository).conclusion


def conclude_run(rt: Runtime, client: InstallationClient, run: RunInfo) -> list[Action]:
    """What (re)writes the comment and the check run of a run with stored results, and what
    follows, in order (``bot.app.core.conclude.from_results``)."""
    return conclude.from_results(conclusion_facts(rt, client, run, with_results=True))


def fail_run(rt: Runtime, client: InstallationClient | None, run: RunInfo, workflow_conclusion: str | None,
             workflow_url: str | None, problem: str) -> list[Action]:
    """The workflow ended without usable results (``problem``: Markdown that may be published):
    what ends the run and what follows (``bot.app.core.conclude.failed``, ``closing``)."""
    actions = conclude.failed(run, workflow_conclusion=workflow_conclusion,
                              workflow_url=workflow_url, problem=problem)
    facts = conclusion_facts(rt, client, run, with_results=False)
    return conclude.closing(run, actions, facts, problem=problem, github=client is not None)
