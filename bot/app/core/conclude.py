"""What follows each step of a run, decided (pure): dispatched, dispatch failed, results
concluded, failed without results, timed out → lists of primitive actions (``UpdateCheckRun``,
``UpsertComment``, ``React``, ``UpdateRun``) that ``bot.app.job.effects`` carries out in order.

A run is described by its :class:`~bot.app.core.facts.RunInfo`; texts come from
``bot.app.core.messages`` and ``bot.app.core.ingest``. What ends a run comes out whole, its
follow-ups included (:func:`from_results`, :func:`closing`): the shell carries it out and decides
nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from runner.report import COMMENT_LIMIT, MARKER, cut_markdown
from runner.report.escape import md_code, plain, safe_link

from . import ingest, messages, regressions
from .actions import (Action, CancelWorkflowRun, DeleteComment, React, UpdateCheckRun, UpdateRun,
                      UpsertComment)
from .facts import Conclusion, FactRequest, RunInfo, run_page
from .handlers.check_run import RERUN_ACTION

#: The check run's "Re-run" button (its ``requested_action`` is handled by
#: ``bot.app.core.handlers.check_run``).
RERUN_BUTTON = {"label": "Re-run", "identifier": RERUN_ACTION, "description": "Benchmark the same commits again"}

#: Longest ``headline`` stored with a run.
HEADLINE_LIMIT = 500


def queued_check_run(spec: RunInfo) -> dict:
    """The fields of a new run's check run (``status`` queued, title and summary)."""
    what = f"`{messages.short(spec.base_sha)}` → `{messages.short(spec.head_sha)}`"
    return {"status": "queued", "title": "Queued on the GPU runners",
            "summary": f"Benchmarking {what}; requested by @{spec.requested_by} ({spec.trigger})."}


def dispatched(spec: RunInfo, *, details_url: str | None, workflow_url: str | None) -> list[Action]:
    """The workflow was dispatched: the PR's comment says the run is queued; the command that
    asked for it gets a 🚀."""
    actions: list[Action] = []
    if spec.pr_number is not None:
        body = messages.queued(base_sha=spec.base_sha, head_sha=spec.head_sha, requested_by=spec.requested_by,
                               trigger=spec.trigger, details_url=details_url, workflow_url=workflow_url,
                               filter_=spec.filter, rounds=spec.rounds, threshold=spec.threshold, profile=spec.profile)
        actions.append(UpsertComment(spec.repository, spec.pr_number, body))
        if spec.react_comment_id:
            actions.append(React(spec.repository, spec.pr_number, spec.react_comment_id, "rocket"))
    return actions


def dispatch_failed(spec: RunInfo, check_run_id: int, *, workflow: str, error: str) -> list[Action]:
    """GitHub refused the dispatch (``error``: fixed text that may be published): the check run
    and the run fail, the PR's comment says why, the command that asked gets a 😕."""
    text = messages.dispatch_failed(workflow, error)
    actions: list[Action] = [
        UpdateCheckRun(spec.repository, check_run_id, {"status": "completed", "conclusion": "failure",
                                                       "title": "Could not start the benchmark", "summary": text}),
        UpdateRun(spec.key, {"status": "completed", "conclusion": "failure",
                             "headline": f"dispatch failed: {error}"[:HEADLINE_LIMIT]})]
    if spec.pr_number is not None:
        actions.append(UpsertComment(spec.repository, spec.pr_number, text))
        if spec.react_comment_id:
            actions.append(React(spec.repository, spec.pr_number, spec.react_comment_id, "confused"))
    return actions


def concluded(run: RunInfo, doc: dict, *, fail_threshold: float, accepts: Sequence[dict], notes: Sequence[dict],
              details_url: str | None, run_page_url: str | None, fail_on_memory: bool = False,
              config_problem: str | None = None) -> list[Action]:
    """Results are stored for ``run``: the check run's conclusion (a regression beyond
    ``fail_threshold``, or with ``fail_on_memory`` a memory regression, that no accept for this
    head covers fails it), the sticky comment with the report, and the run completed.

    Args:
        accepts: the accepts of this PR's head (``history_store.accepts_of``), oldest first.
        notes: each regression's history (``history_store.regression_history_notes``).
        details_url: the link for the rest of the report (the run page, else the workflow run).
        run_page_url: the check run's ``details_url`` (None without ``PERFGATE_PUBLIC_URL``).
        config_problem: why the defaults stood in for the target's config (the comment says so).
    """
    verdict = ingest.conclusion(doc, fail_threshold, [a["benchmark"] for a in accepts], fail_on_memory)
    title = ingest.check_title(doc, verdict, accepts[-1]["user"] if accepts else None)
    actions: list[Action] = []
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "completed", "conclusion": verdict, "title": title,
            "summary": ingest.check_summary(doc, details_url), "details_url": run_page_url,
            "actions": [RERUN_BUTTON]}))
    if run.pr_number is not None:
        body = ingest.comment_body(doc, details_url, accepts, notes, config_problem)
        actions.append(UpsertComment(run.repository, run.pr_number, body))
    actions.append(UpdateRun(run.key, {"status": "completed", "conclusion": verdict, "headline": title}))
    return actions


def failed(run: RunInfo, *, workflow_conclusion: str | None, workflow_url: str | None, problem: str) -> list[Action]:
    """The workflow ended without usable results (``problem``: Markdown that may be published):
    cancelled if the workflow was, else failed; check run, comment and run say so."""
    cancelled = workflow_conclusion == "cancelled"
    conclusion = "cancelled" if cancelled else "failure"
    text = messages.workflow_failed(workflow_conclusion, workflow_url, problem)
    actions: list[Action] = []
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "completed", "conclusion": conclusion, "title": "Cancelled" if cancelled else "No results",
            "summary": text}))
    if run.pr_number is not None:
        actions.append(UpsertComment(run.repository, run.pr_number, text))
    actions.append(UpdateRun(run.key, {"status": "cancelled" if cancelled else "completed", "conclusion": conclusion,
                                       "headline": problem[:HEADLINE_LIMIT]}))
    return actions


def timed_out(run: RunInfo, *, timeout_hours: float, workflow_url: str | None) -> list[Action]:
    """``run`` never reported back within ``timeout_hours``: check run and comment say so
    (GitHub's part first: the sweep records the run as timed out even when GitHub fails)."""
    text = messages.timed_out(timeout_hours, workflow_url)
    actions: list[Action] = []
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "completed", "conclusion": "timed_out", "title": "Timed out", "summary": text}))
    if run.pr_number is not None:
        actions.append(UpsertComment(run.repository, run.pr_number, text))
    actions.append(UpdateRun(run.key, {"status": "timed_out", "conclusion": "timed_out", "headline": "timed out"}))
    return actions


#: How the runs of one request (one per runner group) end together, worst first.
GROUP_ORDER = ("failure", "timed_out", "cancelled", "neutral", "success")


def group_concluded(runs: Sequence[RunInfo], docs: dict[str, dict], *, fail_threshold: float,
                    accepts: Sequence[dict], notes: dict[str, Sequence[dict]], details_url: str | None,
                    run_page_url: str | None, fail_on_memory: bool = False,
                    config_problem: str | None = None) -> list[Action]:
    """The check run and the sticky comment of a request measured on several runner groups (one
    GPU model each): one section per group, in the order of the configuration, each the report of
    its run (or where it stands); the shared check run (the first run's) completes when every run
    has ended, failed when any failed, else as its worst (:data:`GROUP_ORDER`), and stays in
    progress until then.

    Args:
        runs: the group's runs (:func:`bot.app.store.store.runs_of_group`), first one first.
        docs: the stored results of those that have them, by run key.
        accepts: the accepts of the PR's head (``history_store.accepts_of``).
        notes: each run's regression history notes, by run key.
        fail_on_memory: a memory regression fails a group's run as a time regression does
            (config ``fail_on_memory_regression``, as :func:`concluded`).
        config_problem: why the defaults stood in for the target's config (each section says so).
    """
    first = runs[0]
    sections, titles, conclusions = [], [], []
    share = max(2_000, (COMMENT_LIMIT - 500) // max(1, len(runs)))
    accepted = [a["benchmark"] for a in accepts]
    for run in runs:
        name = run.runner or "runner"
        doc = docs.get(run.key)
        if doc is not None:
            verdict = ingest.conclusion(doc, fail_threshold, accepted, fail_on_memory)
            body = ingest.comment_body(doc, details_url, accepts, notes.get(run.key, ()), config_problem)
            body = body.split("\n", 1)[1] if body.startswith(MARKER) else body
            if len(body) > share:
                body = cut_markdown(body, share - 60) + "\n\n… trimmed; the run page has the rest.\n"
            sections.append(f"### {md_code(name)}\n{body}")
            titles.append(f"{name}: {ingest.check_title(doc, verdict)}")
            conclusions.append(verdict)
        elif run.active:
            sections.append(f"### {md_code(name)}\n\n⏳ {run.status.replace('_', ' ')} on its runners.\n")
            titles.append(f"{name}: {run.status.replace('_', ' ')}")
        else:
            sections.append(f"### {md_code(name)}\n\n❌ {run.headline or run.conclusion or 'no results'}\n")
            titles.append(f"{name}: {run.conclusion or 'no results'}")
            conclusions.append(run.conclusion if run.conclusion in GROUP_ORDER else "failure")
    done = len(conclusions) == len(runs)
    heading = "## perfgate: " + ("every GPU model reported" if done else "some GPU models are still running")
    body = "\n".join([MARKER, heading, "", *sections])
    title = plain("; ".join(titles), 250)
    actions: list[Action] = []
    if first.check_run_id:
        fields = {"title": title, "summary": plain(title, messages.CHECK_TEXT_LIMIT),
                  "details_url": run_page_url}
        if done:
            fields.update(status="completed", actions=[RERUN_BUTTON],
                          conclusion=min(conclusions, key=GROUP_ORDER.index))
        else:
            fields["status"] = "in_progress"
        actions.append(UpdateCheckRun(first.repository, first.check_run_id, fields))
    if first.pr_number is not None:
        actions.append(UpsertComment(first.repository, first.pr_number, body[:COMMENT_LIMIT]))
    return actions


# -- the decisions around a run's end (the shell gathers, carries out, and decides none of this) ----
def cancel(run: RunInfo | None, reason: str) -> list[Action]:
    """``CancelRun``: only a stored run still active may be cancelled — its workflow run cancelled
    (when dispatched), its check run concluded ``cancelled`` with ``reason`` (Markdown), the run
    recorded cancelled. Nothing for a run that ended (or is unknown)."""
    if run is None or not run.active:
        return []
    actions: list[Action] = []
    if run.workflow_run_id:
        actions.append(CancelWorkflowRun(run.repository, run.workflow_run_id))
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "completed", "conclusion": "cancelled", "title": messages.CANCELLED_TITLE, "summary": reason}))
    actions.append(UpdateRun(run.key, {"status": "cancelled", "conclusion": "cancelled",
                                       "headline": reason[:HEADLINE_LIMIT]}))
    return actions


def in_progress(run: RunInfo | None, workflow_url: str | None) -> list[Action]:
    """``MarkInProgress``: a queued run's workflow started on a runner (``workflow_url``: its page,
    a checked GitHub link, else None) — the check run says so, then the run is in progress (GitHub
    first: a retry finds the run still queued and does both). Nothing for a run not queued."""
    if run is None or run.status != "queued":
        return []
    actions: list[Action] = []
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "in_progress", "title": messages.IN_PROGRESS_TITLE,
            "summary": messages.in_progress(workflow_url)}))
    actions.append(UpdateRun(run.key, {"status": "in_progress", "workflow_run_url": workflow_url or run.workflow_url}))
    return actions


def covering(accepts: Sequence[dict], run: RunInfo) -> list[dict]:
    """The accepts that cover ``run``: an accept covers the PR and the head it was given for (and
    its benchmarks), never a later push; none for a run of no PR."""
    if run.pr_number is None:
        return []
    return [a for a in accepts if a["pr_number"] == run.pr_number and a["sha"] == run.head_sha]


def request_for(run: RunInfo, *, with_results: bool) -> FactRequest:
    """The facts that concluding ``run`` needs (``Facts.conclusion``): its stored results and its
    group's, the accepts and notes, — for a result to judge or a group to sum up, but not for a
    bisect — the target's configuration, for a history result the series and regressions it
    moves, for a bisect its regression."""
    return FactRequest(conclusion_of=run.key, config=run.kind != "bisect" and (with_results or bool(run.group)),
                       history_series=run.kind == "history" and with_results, bisect_of=run.kind == "bisect")


def from_results(c: Conclusion) -> list[Action]:
    """Everything that ends ``c.run``, whose results are stored, in order: a bisect's check run,
    regression and row (``bot.app.core.regressions.bisect_concluded``, its culprit's pull request
    ``c.culprit_pr``); a compare's check run and comment (:func:`concluded`; its accepts:
    :func:`covering`), what follows from them and its row (:func:`closing`)."""
    run, doc = c.run, c.documents[c.run.key]
    page = run_page(c.public_url, run.key)
    if run.kind == "bisect":
        return regressions.bisect_concluded(c.regression, run, doc, culprit_pr=c.culprit_pr,
                                            details_url=page, public_url=c.public_url,
                                            github_url=c.github_url)
    actions = concluded(run, doc, fail_threshold=c.config.fail_threshold,
                        accepts=covering(c.accepts, run), notes=c.notes.get(run.key, ()),
                        details_url=page or safe_link(run.workflow_url, c.github_url),
                        run_page_url=page, fail_on_memory=c.config.fail_on_memory_regression,
                        config_problem=c.config_problem)
    return closing(run, actions, c, with_results=True)


def group_from_results(c: Conclusion, ended: dict) -> list[Action]:
    """:func:`group_concluded` of ``c.run``'s group, with ``c.run`` as the ``ended`` changes of its
    ``UpdateRun`` leave it (its row is written after); the check run links the group's first run's
    page."""
    fields = {k: v for k, v in ended.items() if k in ("status", "conclusion", "headline")}
    infos = [dataclasses.replace(r, **fields) if r.key == c.run.key else r for r in c.group]
    return group_concluded(infos, c.documents, fail_threshold=c.config.fail_threshold,
                           accepts=covering(c.accepts, c.run), notes=c.notes,
                           details_url=run_page(c.public_url, c.run.key),
                           run_page_url=run_page(c.public_url, c.group[0].key),
                           fail_on_memory=c.config.fail_on_memory_regression,
                           config_problem=c.config_problem)


def closing(run: RunInfo, actions: Sequence[Action], c: Conclusion | None, *,
            with_results: bool = False, problem: str | None = None,
            github: bool = True) -> list[Action]:
    """``actions`` (which end ``run``: :func:`concluded`, :func:`failed`, :func:`timed_out`) with
    what follows from them, in the order of :func:`ending`: the check run and comment of its
    group (:func:`group_from_results`); after a default-branch result, the repository's tracked
    regressions (``bot.app.core.regressions.after_history``); after a bisect without results, its
    regression (``bisect_failed``, ``problem``: why, Markdown of perfgate's).

    Args:
        c: the facts gathered for the conclusion (:func:`request_for`); None only without
            ``github``.
        with_results: ``run``'s results are stored (``c.documents`` has them).
        github: the App can act on GitHub for ``run`` (an installation): nothing follows otherwise.
    """
    follow: list[Action] = []
    if github and run.group:
        follow += group_from_results(c, ended(actions))
    if github and run.kind == "history" and with_results:
        follow += regressions.after_history(
            repository=run.repository, installation_id=run.installation_id, series=c.series,
            tracked=c.tracked, accepts=c.accepts, threshold=c.config.threshold,
            runners=c.config.runners, workflow_ref=run.head_ref, public_url=c.public_url,
            github_url=c.github_url)
    if github and run.kind == "bisect" and not with_results:
        follow += regressions.bisect_failed(c.regression, run, problem, public_url=c.public_url,
                                            github_url=c.github_url)
    return ending(run, actions, follow, github=github)


def ending(run: RunInfo, actions: Sequence[Action], follow: Sequence[Action], *, github: bool = True) -> list[Action]:
    """The order in which what ends ``run`` is carried out: its check run and comment (``actions``
    but its ``UpdateRun``; a run of a group leaves those to the group's, in ``follow``), then what
    follows from its end (``follow``: the group's check run and comment, the default branch's
    regressions), and its own row last — a job that stops on the way finds the run still active
    when it runs again, and does the rest. Without ``github`` (no installation to act as), the
    row alone."""
    own = [a for a in actions if not isinstance(a, UpdateRun) and not run.group and github]
    return [*own, *follow, *[a for a in actions if isinstance(a, UpdateRun)]]


def ended(actions: Sequence[Action]) -> dict:
    """The changes the ``UpdateRun`` among ``actions`` makes to its run (empty: none)."""
    return next((a.changes for a in actions if isinstance(a, UpdateRun)), {})


# -- what GitHub shows that the runs' rows contradict (the reconciling sweep) ------------------------
def left_open(runs: Sequence[RunInfo], checks: Sequence) -> list[Action]:
    """Check runs left open although the runs they report on ended: a create GitHub carried out
    after the retry looked for it (a second check run nobody updates), or a run that ended while
    GitHub did not answer. Each check run not ``completed`` whose ``external_id`` is the key of a
    run of ``runs`` — or of a group of them, every one ended — is completed as they ended (a
    group as its worst, :data:`GROUP_ORDER`).

    Args:
        runs: the stored runs at one head commit.
        checks: GitHub's check runs of the App on that commit (``id``, ``external_id``, ``status``).
    """
    groups: dict[str, list[RunInfo]] = {}
    for run in runs:
        groups.setdefault(run.group or run.key, []).append(run)
    actions: list[Action] = []
    for check in checks:
        members = groups.get(check.external_id or "")
        if check.status == "completed" or not members or any(m.active for m in members):
            continue
        worst = min((m.conclusion if m.conclusion in GROUP_ORDER else "failure" for m in members),
                    key=GROUP_ORDER.index)
        headline = plain("; ".join(m.headline or m.conclusion or m.status for m in members), 250)
        actions.append(UpdateCheckRun(members[0].repository, check.id, {
            "status": "completed", "conclusion": worst, "title": headline,
            "summary": messages.closed_late(headline)}))
    return actions


def duplicate_stickies(repository: str, pr_number: int, stored: int | None, ids: Sequence[int]) -> list[Action]:
    """The App's sticky comments on a PR beyond the one it edits (``stored``, else the oldest):
    a create GitHub carried out after the retry looked for it. They are deleted."""
    keep = stored if stored in ids else (ids[0] if ids else None)
    return [DeleteComment(repository, pr_number, i) for i in ids if i != keep]
