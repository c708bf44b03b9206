"""What follows each step of a run, decided (pure): dispatched, dispatch failed, results
concluded, failed without results, timed out → lists of primitive actions (``UpdateCheckRun``,
``UpsertComment``, ``React``, ``UpdateRun``) that ``bot.app.executor`` carries out in order.

A run is described by its :class:`~bot.app.facts.RunInfo` (or, before it is stored, its
``RunSpec``); texts come from ``bot.app.messages`` and ``bot.app.ingest``.
"""

from __future__ import annotations

from typing import Sequence

from runner.report import COMMENT_LIMIT, MARKER, cut_markdown
from runner.report.escape import md_code, plain

from . import ingest, messages
from .actions import Action, React, RunSpec, UpdateCheckRun, UpdateRun, UpsertComment
from .facts import RunInfo
from .handlers.check_run import RERUN_ACTION

#: The check run's "Re-run" button (its ``requested_action`` is handled by ``bot.app.handlers.check_run``).
RERUN_BUTTON = {"label": "Re-run", "identifier": RERUN_ACTION, "description": "Benchmark the same commits again"}

#: Longest ``headline`` stored with a run.
HEADLINE_LIMIT = 500


def queued_check_run(spec: RunSpec) -> dict:
    """The fields of a new run's check run (``status`` queued, title and summary)."""
    what = f"`{messages.short(spec.base_sha)}` → `{messages.short(spec.head_sha)}`"
    return {"status": "queued", "title": "Queued on the GPU runners",
            "summary": f"Benchmarking {what}; requested by @{spec.requested_by} ({spec.trigger})."}


def dispatched(spec: RunSpec, *, details_url: str | None, workflow_url: str | None) -> list[Action]:
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


def dispatch_failed(spec: RunSpec, check_run_id: int, *, workflow: str, error: str) -> list[Action]:
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
              details_url: str | None, run_page_url: str | None, fail_on_memory: bool = False) -> list[Action]:
    """Results are stored for ``run``: the check run's conclusion (a regression beyond
    ``fail_threshold``, or with ``fail_on_memory`` a memory regression, that no accept for this
    head covers fails it), the sticky comment with the report, and the run completed.

    Args:
        accepts: the accepts of this PR's head (``history_store.accepts_of``), oldest first.
        notes: each regression's history (``history_store.regression_history_notes``).
        details_url: the link for the rest of the report (the run page, else the workflow run).
        run_page_url: the check run's ``details_url`` (None without ``PERFGATE_PUBLIC_URL``).
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
        body = ingest.comment_body(doc, details_url, accepts, notes)
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
    (GitHub's part first: the executor records the run as timed out even when GitHub fails)."""
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
                    run_page_url: str | None, fail_on_memory: bool = False) -> list[Action]:
    """The check run and the sticky comment of a request measured on several runner groups (one
    GPU model each): one section per group, in the order of the configuration, each the report of
    its run (or where it stands); the shared check run (the first run's) completes when every run
    has ended, failed when any failed, else as its worst (:data:`GROUP_ORDER`), and stays in
    progress until then.

    Args:
        runs: the group's runs (:func:`bot.app.store.runs_of_group`), first one first.
        docs: the stored results of those that have them, by run key.
        accepts: the accepts of the PR's head (``history_store.accepts_of``).
        notes: each run's regression history notes, by run key.
        fail_on_memory: a memory regression fails a group's run as a time regression does
            (config ``fail_on_memory_regression``, as :func:`concluded`).
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
            body = ingest.comment_body(doc, details_url, accepts, notes.get(run.key, ()))
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
