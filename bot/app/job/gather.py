"""The facts a decision declared (``bot.app.core.facts.FactRequest``), read from the database and
GitHub (shell): :func:`fetch_facts`. What to read follows the request field by field; what the
reads mean — which run a workflow run binds to, whether the PR is fetched, since when its head is
known, what regressed in a concluded run, which configuration stands — is decided by the pure
rules of ``bot.app.core.facts``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from runner.config import Config

from ...history import reads as history_reads
from ...history.points import fingerprint_of
from ...history.tables import Result
from ..core import facts as rules
from ..core import regressions
from ..store import store as app_store
from ..core.events import Event
from ..core.facts import Conclusion, FactRequest, Facts, RunInfo
from ..github.gateway import InstallationClient
from ..github.github_errors import GitHubError
from .shell import Runtime, log


def fetch_facts(rt: Runtime, client: InstallationClient | None, event: Event | None, request: FactRequest,
                repository: str | None = None) -> Facts:
    """The :class:`~bot.app.core.facts.Facts` that ``request`` (a handler's ``facts_for``, or
    ``bot.app.core.conclude.request_for``) asks for, about ``event``'s repository (else
    ``repository``), from the database and GitHub (GitHub only where asked; nothing that needs
    GitHub without a client).

    Raises:
        GitHubError: GitHub did not answer (transient) a read the facts need.
    """
    repo = event.repository if event is not None else repository
    if not repo or (request.needs_github and client is None):
        return Facts()
    data = event.data if event is not None else None
    found: dict[str, Any] = {"public_url": rt.settings.public_url, "github_url": rt.settings.github_url}
    config, config_problem = None, None
    if request.config:
        config, config_problem = _config(client, repo, data, found)
    number = request.pr_number
    with rt.db.session() as session:
        if number is not None:
            found["runs"] = _infos(app_store.runs_of_pull(session, repo, number))
            stored = app_store.get_pull(session, repo, number)
            found["approved_sha"] = stored.approved_sha if stored is not None and request.approved_sha else None
            if request.refusal_of:
                found["refused_before"] = app_store.refused_before(session, repo, number, request.refusal_of)
        if request.comment_id is not None:
            found["last_command"] = app_store.last_command(session, repo, request.comment_id)
        if request.workflow_run_id is not None:
            found["run"] = rules.bound_run(
                _info(app_store.run_for_workflow(session, repo, request.workflow_run_id)),
                _info(app_store.get_run(session, request.dispatched_key or "")),
                repository=repo, workflow_path=request.workflow_path, workflow=rt.settings.workflow)
        if request.run_key is not None:
            row = app_store.get_run(session, request.run_key)
            if row is None or row.repository != repo:
                return Facts()
            found["run"] = app_store.run_info(row)
            found["runs"] = _infos(app_store.runs_of_pull(session, repo, row.pr_number or 0))
        if request.head_sha:
            found["runs"] = _infos(app_store.runs_at_head(session, repo, request.head_sha))
        if request.issue_number is not None:
            found["regression"] = _regression(app_store.regression_of_issue(session, repo, request.issue_number))
        if request.keyed_runs:
            found["runs"] = _infos(app_store.get_run(session, key) for key in request.keyed_runs)
        if request.conclusion_of is not None:
            found["conclusion"] = _conclusion(rt, session, request, config, config_problem)
    if rules.wants_permission(request, found.get("refused_before", False)):
        found["permission"] = client.permission(repo, request.permission_of)
    if rules.wants_config(request, found.get("permission")) and not request.config:
        _config(client, repo, data, found)
    if rules.wants_pull(request, found.get("permission")):
        found.update(_pull(rt, client, repo, number, request))
    branch = ((data or {}).get("repository") or {}).get("default_branch")
    found["places"] = {sha: client.place_of(repo, branch, sha)
                       for sha in rules.wants_places(request, found.get("permission"), branch)}
    if request.bisect_of and found.get("conclusion") is not None:
        found["conclusion"] = _with_culprit(rt, client, found["conclusion"])
    return Facts(**found)


def _config(client: InstallationClient, repo: str, data: dict | None,
            found: dict) -> tuple[Config, str | None]:
    """:func:`config_and_problem`, its label and runner groups put in ``found``."""
    config, problem = config_and_problem(client, repo, data)
    found["label"], found["runners"] = config.label, config.runners
    return config, problem


def _info(row) -> RunInfo | None:
    return app_store.run_info(row) if row is not None else None


def _infos(rows) -> tuple[RunInfo, ...]:
    return tuple(app_store.run_info(row) for row in rows if row is not None)


def _regression(row):
    return app_store.regression_info(row) if row is not None else None


def _pull(rt: Runtime, client: InstallationClient, repo: str, number: int, request: FactRequest) -> dict:
    """The PR as GitHub sees it now, since when its head is known, and the run concluded before
    ``request.concluded_before``."""
    pull = client.pull(repo, number)
    with rt.db.session() as session:
        stored = app_store.get_pull(session, repo, number)
        seen = rules.head_seen(stored.head_sha, stored.head_seen_at, pull) if stored is not None else None
        run = app_store.latest_concluded_run(session, repo, number, before=request.concluded_before) \
            if request.concluded_before is not None else None
        concluded = rules.concluded_run(run.key, run.head_sha, session.get(Result, run.result_id).document) \
            if run is not None else None
    return {"pull": pull, "head_seen_at": seen, "concluded": concluded}


def _conclusion(rt: Runtime, session, request: FactRequest, config: Config | None,
                config_problem: str | None = None) -> Conclusion | None:
    """The stored results and rows a conclusion of run ``request.conclusion_of`` looks at
    (``bot.app.core.facts.Conclusion``)."""
    row = app_store.get_run(session, request.conclusion_of)
    if row is None:
        return None
    rows = app_store.runs_of_group(session, row.group_key) if row.group_key else [row]
    docs = {r.key: session.get(Result, r.result_id).document for r in rows if r.result_id is not None}
    notes = {k: history_reads.regression_history_notes(session, row.repository, doc,
                                                       rt.settings.public_url)
             for k, doc in docs.items()}
    found: dict[str, Any] = {}
    if request.history_series:
        doc = docs.get(row.key) or {}
        key = fingerprint_of(doc.get("environment") or {}).key
        names = sorted({str(b.get("name")) for b in doc.get("benchmarks") or []})
        found["series"] = tuple(regressions.of_environment(
            history_reads.load_series(session, row.repository, benchmarks=names), key))
        found["tracked"] = tuple(app_store.regression_info(r) for r in app_store.regressions_of(session, row.repository))
    if request.bisect_of:
        found["regression"] = _regression(app_store.regression_of_bisect(session, row.key))
    return Conclusion(run=app_store.run_info(row), group=_infos(rows), documents=docs,
                      accepts=tuple(history_reads.accepts_of(session, row.repository)), notes=notes,
                      config=config or Config(), config_problem=config_problem,
                      public_url=rt.settings.public_url, github_url=rt.settings.github_url, **found)


def _with_culprit(rt: Runtime, client: InstallationClient, c: Conclusion) -> Conclusion:
    """``c`` with the pull request that merged the culprit its bisect's results name, if any."""
    culprit = regressions.found_culprit(c.documents.get(c.run.key) or {})
    if culprit is None:
        return c
    return dataclasses.replace(c, culprit_pr=_culprit_pr(rt, client, c.run.repository, culprit))


def _culprit_pr(rt: Runtime, client: InstallationClient, repository: str,
                culprit: dict) -> int | None:
    """The pull request that merged ``culprit`` (``bot.app.core.regressions.found_culprit``): as the
    App recorded it (``RecordMerge``), else as GitHub lists the commit's merged pull requests, else
    as the commit's subject names it (``bot.app.core.regressions.named_pr``).

    Raises:
        GitHubError: GitHub did not answer (transient).
    """
    with rt.db.session() as session:
        number = history_reads.pull_request_of_commit(session, repository, culprit["sha"])
    if number is not None:
        return number
    try:
        merged = client.pulls_of_commit(repository, culprit["sha"])
    except GitHubError as exc:
        if exc.transient:
            raise
        merged = []
    return merged[0] if merged else regressions.named_pr(culprit)


def lease_run(session, repo: str, request: FactRequest) -> RunInfo | None:
    """The stored run a delivery without a PR number is about, for its lease
    (``bot.app.core.facts.lease_name``): by key, else by workflow run (id, then dispatched key),
    else the newest run at its head commit; None for a delivery about a PR (the payload names
    it)."""
    if request.pr_number is not None:
        return None
    key = request.run_key or (request.keyed_runs[0] if request.keyed_runs else None)
    row = app_store.get_run(session, key or "") \
        or app_store.run_for_workflow(session, repo, request.workflow_run_id or 0) \
        or app_store.get_run(session, request.dispatched_key or "")
    if row is None and request.head_sha:
        runs = app_store.runs_at_head(session, repo, request.head_sha)
        row = runs[-1] if runs else None
    return _info(row)


def config_of(client: InstallationClient, repo: str, data: dict | None = None) -> Config:
    """:func:`config_and_problem`'s config (the problem is logged there)."""
    return config_and_problem(client, repo, data)[0]


def config_and_problem(client: InstallationClient, repo: str,
                       data: dict | None = None) -> tuple[Config, str | None]:
    """The target's config from its default branch (a PR cannot change its own trigger, runner
    groups or webhook; ``bot.app.core.facts.settled_config``); ``data``: the delivery's payload (its
    ``repository.default_branch``).

    Raises:
        GitHubError: GitHub did not answer (transient): the retry reads it, never the defaults
            by mistake.
    """
    branch = ((data or {}).get("repository") or {}).get("default_branch")
    where = f"{repo}@{branch or 'default branch'}"
    try:
        texts, unreadable = client.config_texts(repo, branch), None
    except GitHubError as exc:
        if exc.transient:
            raise
        texts, unreadable = None, exc.detail
    config, problem = rules.settled_config(texts, where, unreadable)
    if problem:
        log.warning("%s", problem)
    return config, problem
