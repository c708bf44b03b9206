"""Regressions on the default branch, decided (pure): which change points of the history become a
tracked regression (a bisect on the same kind of runner, a tracking issue, one message), when one
is over (its series recovered, or a maintainer accepted it), and what follows a bisect's outcome.

*Confirmed* change point: a change point of a default-branch series (``bot.history.changepoints``
keeps only significant splits with at least three points on either side) that slows the benchmark
by more than the target's ``threshold``, among the series' :data:`RECENT` newest points (older
ones were there before: a new perfgate does not open issues for last year's history). The change
points of one environment at the same commit are one regression: the clearest (the largest ratio)
is bisected, the others are named with it. Its key is the repository, the fingerprint and the
commit (:func:`regression_key`), so a job that runs again, or a later point that leaves the change
point where it was, finds it tracked already.

A tracked regression is driven from its stored state, never from what a job remembers: whatever a
retried job finds missing (a bisect never dispatched, a tracking issue never made) is done again by
the same idempotent actions (``bot.app.job.effects``, ``bot.app.job.tracking``: runs by key, issues
by their hidden mark, one message by ``notified_at``).

It is over when ``bot.history.series.classify_alerts`` calls its change point ``fixed``,
``reverted`` or ``accepted``, or when the change point is no longer detected; or when a maintainer
comments ``/perf accept`` in its tracking issue.
"""

from __future__ import annotations

from typing import Sequence

from runner.report.escape import plain
from runner.selection import misses

from ...history.series import ChangePoint, Series, classify_alerts
from ...history.texts import bench_url
from . import messages
from .actions import (Action, CommentOnCulprit, Notify, OpenRegression, RegressionSpec,
                      SaveRegression, StartRun, UpdateCheckRun, UpdateRun, UpsertTrackingIssue)
from .facts import RegressionInfo, RunInfo, run_key

#: A change point among a series' this many newest points may open a regression.
RECENT = 20

#: Outcomes of ``classify_alerts`` that end a tracked regression, with the issue's close reason.
OVER = {"fixed": "completed", "reverted": "completed", "accepted": "not_planned"}


def regression_key(repository: str, fingerprint: str | None, sha: str | None) -> str:
    """The key of the regression at commit ``sha`` of the series of environment ``fingerprint``."""
    return run_key(repository, "regression", fingerprint, sha)


def bisect_key(key: str, attempt: object = 0) -> str:
    """The run key of a regression's bisect (``attempt``: 0 for the first, a command's comment id
    for a later one)."""
    return run_key(key, "bisect", attempt)


def runner_of(fingerprint: dict, runners: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[str | None, tuple[str, ...]]:
    """The runner group that measured a series: the fingerprint's ``runner_label`` when it names a
    configured group (the App records the group a run ran on), with its labels; else no group
    (the workflow's own runners)."""
    label = fingerprint.get("runner_label")
    for name, labels in runners:
        if name == label:
            return name, tuple(labels)
    return None, ()


def confirmed(series: Series, threshold: float) -> list[ChangePoint]:
    """The series' confirmed regression change points (see the module docstring), oldest first."""
    newest = len(series.points)
    return [cp for cp in series.change_points
            if cp.ratio > 1.0 + threshold and cp.index >= newest - RECENT and cp.sha and cp.prev_sha]


def bisect_spec(r: RegressionInfo | RegressionSpec, key: str, *, trigger: str, workflow_ref: str | None,
                requested_by: str | None) -> RunInfo:
    """The bisect run of regression ``r``: ``good``..``bad`` on its runner group, for its benchmark."""
    return RunInfo(key=key, repository=r.repository, installation_id=r.installation_id,
                   kind="bisect", trigger=trigger, head_sha=r.bad_sha, base_sha=r.good_sha,
                   head_ref=workflow_ref, base_ref=workflow_ref, requested_by=requested_by,
                   filter=r.benchmark or None, workflow_ref=workflow_ref, runner=r.runner,
                   runs_on=tuple(r.runs_on), regression=r.key)


def _commit_url(github_url: str, repository: str) -> str:
    return f"{github_url.rstrip('/')}/{repository}/commit"


def tracking_issue(r: RegressionInfo, state: str, *, public_url: str | None, github_url: str,
                   close: str | None = None) -> UpsertTrackingIssue:
    """The tracking issue of ``r`` as it should read now (``state``: the bisect's, Markdown)."""
    history = bench_url(public_url, r.repository, r.benchmark) if public_url and r.benchmark else None
    return UpsertTrackingIssue(r.repository, r.key,
                               messages.regression_title(r.benchmark, r.ratio, r.environment, r.runner),
                               messages.regression_body(r, history_url=history, state=state,
                                                        commit_url=_commit_url(github_url, r.repository)),
                               close)


def info_of(spec: RegressionSpec) -> RegressionInfo:
    """A regression about to be stored, as :class:`RegressionInfo` (for its texts)."""
    return RegressionInfo(key=spec.key, repository=spec.repository, benchmark=spec.benchmark, good_sha=spec.good_sha,
                          bad_sha=spec.bad_sha, trigger=spec.trigger, installation_id=spec.installation_id,
                          fingerprint=spec.fingerprint, environment=spec.environment, runner=spec.runner,
                          runs_on=spec.runs_on, ratio=spec.ratio, requested_by=spec.requested_by, also=spec.also)


def open_regression(spec: RegressionSpec, *, workflow_ref: str | None, public_url: str | None,
                    github_url: str) -> list[Action]:
    """Track a new regression: store it, open its tracking issue, dispatch its bisect."""
    return [OpenRegression(spec), *advance(info_of(spec), workflow_ref=workflow_ref, public_url=public_url,
                                           github_url=github_url)]


def advance(r: RegressionInfo, *, workflow_ref: str | None, public_url: str | None, github_url: str) -> list[Action]:
    """What an open regression still lacks, read from its stored state: its tracking issue (found by
    its mark, else opened) and its bisect (dispatched by its run's key, then recorded — in that
    order, so a bisect recorded is one that was dispatched). A job that stopped half way finds
    here exactly what is left; both actions are idempotent."""
    if r.closed:
        return []
    actions: list[Action] = []
    if r.issue_number is None:
        state = r.outcome or messages.bisect_state("queued", culprit=None, suspects=None, pr=None,
                                                   commit_url=_commit_url(github_url, r.repository))
        actions.append(tracking_issue(r, state, public_url=public_url, github_url=github_url))
    if r.bisect_key is None:
        key = bisect_key(r.key)
        actions += [StartRun(bisect_spec(r, key, trigger=r.trigger, workflow_ref=workflow_ref,
                                         requested_by=r.requested_by)),
                    SaveRegression(r.key, {"bisect_key": key})]
    return actions


def after_history(*, repository: str, installation_id: int | None, series: Sequence[Series],
                  tracked: Sequence[RegressionInfo], accepts: Sequence[dict], threshold: float,
                  runners: Sequence[tuple[str, tuple[str, ...]]], workflow_ref: str | None,
                  public_url: str | None, github_url: str) -> list[Action]:
    """What a stored default-branch result means for the regressions of ``repository``.

    Args:
        series: the series the result added points to (with their change points).
        tracked: the repository's tracked regressions.
        accepts: ``history_store.accepts_of`` (``classify_alerts`` reads them).
        threshold: the target's practical threshold (fraction): smaller slowdowns are not tracked.
        runners: the target's runner groups (``runner.config.Config.runners``).
    """
    actions: list[Action] = []
    by_key = {r.key: r for r in tracked}
    found: dict[str, list[tuple[Series, ChangePoint]]] = {}
    for s in series:
        for cp in confirmed(s, threshold):
            found.setdefault(regression_key(repository, s.fingerprint.get("key"), cp.sha), []).append((s, cp))
    for key, hits in found.items():
        if key in by_key:
            continue
        hits.sort(key=lambda hit: (-hit[1].ratio, hit[0].benchmark))
        s, cp = hits[0]
        runner, labels = runner_of(s.fingerprint, runners)
        spec = RegressionSpec(key=key, repository=repository, installation_id=installation_id, benchmark=s.benchmark,
                              good_sha=cp.prev_sha, bad_sha=cp.sha, trigger="changepoint",
                              fingerprint=s.fingerprint.get("key"), environment=s.fingerprint.get("label"),
                              runner=runner, runs_on=labels, ratio=cp.ratio,
                              also=tuple(sorted({other.benchmark for other, _ in hits[1:]})))
        actions += open_regression(spec, workflow_ref=workflow_ref, public_url=public_url, github_url=github_url)
    outcomes = {(a["benchmark"], a["fingerprint"], a["sha"]): a for a in classify_alerts(series, accepts)}
    present = {(s.benchmark, s.fingerprint.get("key")) for s in series}
    for r in tracked:
        if r.closed or r.trigger != "changepoint" or (r.benchmark, r.fingerprint) not in present:
            continue
        actions += advance(r, workflow_ref=workflow_ref, public_url=public_url, github_url=github_url)
        alert = outcomes.get((r.benchmark, r.fingerprint, r.bad_sha))
        if alert is None:
            reason = "the change point is no longer detected in the benchmark's history."
            close = "not_planned"
        elif alert["status"] in OVER:
            by = f" ({alert['by'] if alert['status'] == 'accepted' else str(alert['by'])[:12]})" if alert.get("by") else ""
            reason = {"fixed": "the benchmark recovered", "reverted": "the benchmark recovered with a revert",
                      "accepted": "a maintainer accepted it"}[alert["status"]] + f"{by}."
            close = OVER[alert["status"]]
        else:
            continue
        actions += close_regression(r, reason, close, public_url=public_url, github_url=github_url)
    return actions


def close_regression(r: RegressionInfo, reason: str, close: str, *, public_url: str | None,
                     github_url: str) -> list[Action]:
    """End a tracked regression: stored closed with ``reason`` (plain words of perfgate's), its
    issue closed (``close``: GitHub's ``state_reason``)."""
    ended = RegressionInfo(**{**r.__dict__, "status": "closed", "closed_reason": reason})
    return [SaveRegression(r.key, {"status": "closed", "closed_reason": reason}),
            tracking_issue(ended, r.outcome or "no result.", public_url=public_url, github_url=github_url,
                           close=close)]


def bisect_concluded(r: RegressionInfo | None, run: RunInfo, doc: dict, *, culprit_pr: int | None,
                     details_url: str | None, public_url: str | None, github_url: str) -> list[Action]:
    """A bisect's results are stored: its check run and run end (the run's row last), and — when
    it is its regression's latest bisect — the regression records the culprit, the culprit's PR
    hears of it (``culprit_pr``: the PR that merged it, as the App recorded it or the commit's
    subject names it), the tracking issue says so and the one message goes out."""
    section = doc.get("bisect") or {}
    status = str(section.get("status") or "stopped")
    culprit = section.get("culprit") if status == "found" else None
    commit_url = _commit_url(github_url, run.repository)
    budget = section.get("budget") or {}
    state = messages.bisect_state(status, culprit=culprit, suspects=section.get("suspects"), commit_url=commit_url,
                                  pr=culprit_pr, more_than_one_step=bool(section.get("more_than_one_step")),
                                  compares=budget.get("compares"), seconds=budget.get("spent_s"),
                                  details_url=details_url)
    title = plain(f"Bisect: {status}" + (f", {str(culprit.get('sha'))[:12]}" if culprit else ""), 250)
    actions: list[Action] = []
    if run.check_run_id:
        actions.append(UpdateCheckRun(run.repository, run.check_run_id, {
            "status": "completed", "conclusion": "neutral", "title": title, "summary": state,
            "details_url": details_url}))
    # the run's own row last: a job that stops on the way finds it active and does the rest again
    ended = UpdateRun(run.key, {"status": "completed", "conclusion": "neutral", "headline": title})
    if r is None or r.bisect_key != run.key:
        return [*actions, ended]  # a bisect a later one superseded: its run ends, its regression moved on
    changes = {"status": "found" if culprit else "unresolved", "outcome": state,
               "culprit_sha": culprit.get("sha") if culprit else None, "culprit_pr": culprit_pr if culprit else None}
    updated = RegressionInfo(**{**r.__dict__, **changes})
    actions.append(SaveRegression(r.key, changes))
    issue_url = f"{github_url.rstrip('/')}/{r.repository}/issues/{r.issue_number}" if r.issue_number else None
    if culprit and culprit_pr:
        history = bench_url(public_url, r.repository, r.benchmark) if public_url and r.benchmark else None
        actions.append(CommentOnCulprit(r.repository, r.key, run.key, culprit_pr, messages.culprit_comment(
            updated, culprit=culprit, issue_url=issue_url, history_url=history, details_url=details_url,
            mark=messages.culprit_mark(r.key, run.key))))
    if not r.closed:
        actions.append(tracking_issue(updated, state, public_url=public_url, github_url=github_url))
    actions.append(Notify(r.repository, r.key, messages.regression_message(updated, status=status, culprit=culprit,
                                                                           pr=culprit_pr, issue_url=issue_url)))
    return [*actions, ended]


def bisect_failed(r: RegressionInfo | None, run: RunInfo, problem: str, *, public_url: str | None,
                  github_url: str) -> list[Action]:
    """A bisect ended without results (its workflow failed, or never reported back): the
    regression says so in its issue and its one message (``problem``: Markdown of perfgate's).
    Nothing when ``run`` is not its regression's latest bisect."""
    if r is None or r.bisect_key != run.key:
        return []
    state = messages.bisect_state("failed", culprit=None, suspects=None, pr=None, commit_url="", problem=problem)
    updated = RegressionInfo(**{**r.__dict__, "status": "unresolved", "outcome": state})
    issue_url = f"{github_url.rstrip('/')}/{r.repository}/issues/{r.issue_number}" if r.issue_number else None
    actions: list[Action] = [SaveRegression(r.key, {"status": "unresolved", "outcome": state})]
    if not r.closed:
        actions.append(tracking_issue(updated, state, public_url=public_url, github_url=github_url))
    actions.append(Notify(r.repository, r.key, messages.regression_message(updated, status="failed", culprit=None,
                                                                           pr=None, issue_url=issue_url)))
    return actions


def found_culprit(doc: dict) -> dict | None:
    """The culprit commit a bisect's results name (``bisect.culprit``: ``{sha, pr, ...}``) when it
    found one, else None."""
    section = doc.get("bisect") or {}
    culprit = section.get("culprit") if section.get("status") == "found" else None
    return culprit if isinstance(culprit, dict) and isinstance(culprit.get("sha"), str) and culprit["sha"] else None


def named_pr(culprit: dict) -> int | None:
    """The pull request number a culprit's commit subject names (``culprit.pr``), if it is one."""
    pr = culprit.get("pr")
    return pr if isinstance(pr, int) and not isinstance(pr, bool) and pr > 0 else None


def of_environment(series: Sequence, key: str) -> list:
    """The series (``bot.history.series.Series``) of the environment whose fingerprint key is
    ``key``: those a result measured there touched."""
    return [s for s in series if s.fingerprint.get("key") == key]


def followed_culprits(tracked: Sequence[RegressionInfo]) -> list[RegressionInfo]:
    """The tracked regressions whose culprit's pull request :func:`selection_misses` looks at:
    those not closed that have a culprit."""
    return [r for r in tracked if r.status != "closed" and r.culprit_sha]


def selection_misses(tracked: Sequence[tuple[str, str, int | None, dict | None]]) -> dict[str, str]:
    """Selection misses (pure): tracked regressions whose culprit's pull request skipped the
    benchmark as not affected (``selection.skipped`` of that PR's result, runner.selection).

    Args:
        tracked: ``(benchmark, status, culprit's PR number, that PR's newest results.json or None)``
            per tracked regression.

    Returns:
        ``{benchmark: why}`` for the regressions not ``closed``: each such benchmark runs in every
        PR compare (``force-run``) while its regression is tracked — the map that missed it is
        rebuilt by then, and the history has the benchmark's new level.
    """
    found: dict[str, str] = {}
    for benchmark, status, pr, doc in tracked:
        if status == "closed" or pr is None or not isinstance(doc, dict):
            continue
        skipped = {s.get("name"): f"#{pr}" for s in (doc.get("selection") or {}).get("skipped") or []
                   if isinstance(s, dict)}
        found.update(misses(skipped, {benchmark: "regression"}))
    return found
