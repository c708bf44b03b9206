"""What a decision may know besides the payload, as plain data (:class:`Facts` and its parts), and
the rules that name them (:func:`run_key`, :func:`may_command`, ...) and say what to read; the
handlers, the GitHub gateway and the store all speak these types; nothing here does I/O."""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field
from typing import Any

from runner.config import Config
from runner.config import from_texts as config_from_texts
from runner.errors import ConfigError
from runner.results import verdict_of

from ...history.points import parse_time

#: Permissions (``get_collaborator_permission``) allowed to command perfgate. GitHub folds
#: maintain into write and triage into read; both spellings are accepted here.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


#: The statuses of a run still waiting for its results; :data:`ENDED_STATES`: those of a run that
#: ended (reaching one sets the run's ``completed_at``). A run is ``queued`` (created, dispatched or
#: about to be), ``in_progress``, ``completed`` (results ingested, or the workflow failed),
#: ``cancelled`` (superseded, unlabeled, closed or /perf cancel) or ``timed_out`` (never reported
#: back within the configured time).
ACTIVE_STATES = ("queued", "in_progress")
ENDED_STATES = ("completed", "cancelled", "timed_out")


@dataclass(frozen=True)
class PullInfo:
    """A PR as GitHub describes it (payload or ``pulls/get``)."""

    number: int
    head_sha: str
    base_sha: str
    head_ref: str | None = None
    base_ref: str | None = None
    is_fork: bool = False
    labels: tuple[str, ...] = ()
    state: str = "open"
    url: str | None = None
    title: str | None = None
    updated_at: str | None = None  # ISO-8601, as GitHub sent it

    def tracked(self) -> dict:
        """The ``SavePull`` changes that record this head, with the time GitHub says the PR was
        last updated: the head existed then (evidence for approvals, ``head_seen_at``)."""
        return {"head_sha": self.head_sha, "base_sha": self.base_sha, "is_fork": self.is_fork,
                "head_seen_at": parse_time(self.updated_at)}


@dataclass(frozen=True, kw_only=True)
class RunInfo:
    """A benchmark run: what it measures and who asked (a :class:`~bot.app.core.actions.StartRun`'s
    ``spec``, as the handlers and ``bot.app.core.regressions`` build it) and, once stored
    (``bot.app.store.tables.Run``, ``bot.app.store.store.run_info``), where it stands (``status``
    and the fields after it, their defaults until then); stored plans name it ``RunSpec`` too.

    ``key``: deterministic public id (:func:`run_key`); ``kind``: ``pr`` (compare a PR's base and
    head), ``history`` (a push to the default branch) or ``bisect`` (``perfgate bisect`` of
    ``base_sha``..``head_sha`` for the benchmark ``filter``, ``bot.app.core.regressions``);
    ``trigger``: label, synchronize, reopened, command, rerun, push, changepoint; ``rounds``: round
    pairs before the first look (None: the target's config); ``threshold``: fraction (None: config).
    """

    key: str
    head_sha: str
    repository: str = ""
    installation_id: int | None = None
    kind: str = "pr"
    trigger: str = ""
    base_sha: str | None = None
    pr_number: int | None = None
    head_ref: str | None = None
    base_ref: str | None = None
    requested_by: str | None = None
    filter: str | None = None
    rounds: int | None = None
    threshold: float | None = None
    profile: bool = False
    react_comment_id: int | None = None  # 🚀 on this comment once dispatched
    workflow_ref: str | None = None  # branch whose workflow file is dispatched (the default branch)
    runner: str | None = None  # its runner group ([runners.NAME]); None: the workflow's own runners
    runs_on: tuple[str, ...] = ()  # that group's labels
    group: str | None = None  # the key its request's runs share (one per runner group): the first's
    regression: str | None = None  # kind ``bisect``: the key of the regression it bisects
    all_benchmarks: bool = False  # /perf run --all: no selection ([selection] of the config)
    force_run: tuple[str, ...] = ()  # benchmarks run whatever the selection says (selection misses)
    # -- where it stands, once stored
    status: str = "queued"
    check_run_id: int | None = None
    workflow_run_id: int | None = None
    workflow_url: str | None = None  # the workflow run's page, as stored (a checked GitHub link)
    has_results: bool = False  # its results are stored
    conclusion: str | None = None
    headline: str | None = None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATES

    @property
    def measured(self) -> bool:
        """Being measured or measured: active, or ended with stored results (a run that could
        not start, or whose workflow failed, does not count)."""
        return self.active or self.has_results


@dataclass(frozen=True)
class RegressionInfo:
    """A tracked regression on the default branch (``bot.app.store.tables.Regression``) as plain
    data; see :class:`bot.app.core.actions.RegressionSpec` for the fields it was opened with."""

    key: str
    repository: str
    benchmark: str
    good_sha: str
    bad_sha: str
    status: str = "open"
    trigger: str = "changepoint"
    installation_id: int | None = None
    fingerprint: str | None = None
    environment: str | None = None
    runner: str | None = None
    runs_on: tuple[str, ...] = ()
    ratio: float | None = None
    requested_by: str | None = None
    issue_number: int | None = None
    bisect_key: str | None = None
    culprit_sha: str | None = None
    culprit_pr: int | None = None
    outcome: str | None = None
    closed_reason: str | None = None
    also: tuple[str, ...] = ()

    @property
    def closed(self) -> bool:
        return self.status == "closed"


@dataclass(frozen=True)
class ConcludedRun:
    """A run whose results were reported: the head it measured and the benchmarks that regressed."""

    key: str
    head_sha: str
    regressions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conclusion:
    """What concluding a run with stored results may look at (``FactRequest.conclusion_of``).

    ``run``: the run; ``group``: the runs of its request (one per runner group; ``(run,)`` without
    groups), as stored; ``documents``: the stored results.json of those with results (by key);
    ``accepts``: the repository's accepts
    (``bot.history.reads.accepts_of``; which of them cover the run is the core's decision,
    :func:`bot.app.core.conclude.covering`); ``notes``: each document's regression-history notes (by
    key); ``config``: the target's configuration from its default branch; ``config_problem``:
    why the defaults stand in for it (None: read as written); for a history result
    (``FactRequest.history_series``) the series of its environment that it touched
    (``bot.history.series.Series``) and the repository's tracked regressions; for a bisect
    (``FactRequest.bisect_of``) the regression it bisects (None: none follows it) and, when its
    results name a culprit, the pull request that merged it (``culprit_pr``); ``public_url``,
    ``github_url``: the App's own address and GitHub's (``bot.settings``), for the links it writes.
    """

    run: RunInfo
    group: tuple[RunInfo, ...] = ()
    documents: dict[str, dict] = field(default_factory=dict, hash=False)
    accepts: tuple[dict, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict, hash=False)
    config: Config = field(default_factory=Config, hash=False)
    config_problem: str | None = None
    series: tuple = ()
    tracked: tuple[RegressionInfo, ...] = ()
    regression: RegressionInfo | None = None
    culprit_pr: int | None = None
    public_url: str | None = None
    github_url: str = "https://github.com"


@dataclass(frozen=True)
class Facts:
    """What a decision may look at besides the payload.

    ``label``: the target's trigger label; ``permission``: the sender's collaborator
    permission (None when not looked up); ``pull``: the PR now; ``approved_sha``: the head
    SHA a maintainer last approved (label or command; fork safety); ``runs``: the stored runs of this PR (of the pushed commit for
    ``push``); ``run``: the run a workflow_run/check_run event is about; ``last_command``: the command last acted on for
    this comment; ``refused_before``: this sender was already told once on this PR; ``head_seen_at``: the
    earliest time a ``pull_request`` event showed ``pull.head_sha`` as the PR's head (None: never seen);
    ``concluded``: the PR's newest run whose results were reported before the comment was written;
    ``runners``: the target's runner groups (``[runners.NAME]``, read with ``label``); ``regression``: the
    tracked regression whose tracking issue the comment was written in; ``places``: GitHub's compare
    status of each commit a command names against the default branch (None: no such commit);
    ``public_url``, ``github_url``: the App's and GitHub's addresses (``bot.settings``).
    """

    label: str = "performance"
    permission: str | None = None
    pull: PullInfo | None = None
    approved_sha: str | None = None
    runs: tuple[RunInfo, ...] = ()
    last_command: str | None = None
    refused_before: bool = False
    default_branch: str | None = None
    run: RunInfo | None = None
    head_seen_at: _dt.datetime | None = None
    concluded: ConcludedRun | None = None
    runners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    regression: RegressionInfo | None = None
    public_url: str | None = None
    github_url: str = "https://github.com"
    conclusion: Conclusion | None = None
    places: dict[str, str | None] = field(default_factory=dict, hash=False)


def run_key(*parts: object) -> str:
    """A deterministic 20-hex run id from its identifying parts (repository, PR, head SHA,
    trigger, ...): the same trigger handled twice (a job retry) yields the same key."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def run_page(public_url: str | None, key: str) -> str | None:
    """The page of run ``key`` on the App's site (a check run's ``details_url``); None without
    ``PERFGATE_PUBLIC_URL`` (``public_url``)."""
    return f"{public_url}/runs/{key}" if public_url else None


def may_command(permission: str | None) -> bool:
    return (permission or "none") in WRITE_PERMISSIONS


def pull_from_payload(pr: dict) -> PullInfo:
    """:class:`PullInfo` from a webhook's or the REST API's pull request object."""
    head, base = pr.get("head") or {}, pr.get("base") or {}
    head_repo = (head.get("repo") or {}).get("full_name")
    base_repo = (base.get("repo") or {}).get("full_name")
    return PullInfo(number=int(pr["number"]), head_sha=head.get("sha", ""), base_sha=base.get("sha", ""),
                    head_ref=head.get("ref"), base_ref=base.get("ref"),
                    # a deleted fork has no head repo: treat it as a fork (the safe side)
                    is_fork=head.get("repo") is None or (bool(head_repo) and head_repo != base_repo),
                    labels=tuple(lb.get("name", "") for lb in pr.get("labels") or []),
                    state=pr.get("state", "open"), url=pr.get("html_url"), title=pr.get("title"),
                    updated_at=pr.get("updated_at"))


@dataclass(frozen=True)
class FactRequest:
    """Which :class:`Facts` a decision needs, declared by its event's handler module
    (``facts_for``) and fetched by ``bot.app.job.gather``.

    ``pr_number``: the PR whose stored runs (``Facts.runs``) are read; with ``approved_sha``
    also the head SHA a maintainer approved. ``config``: the target's configuration from its
    default branch (``Facts.label``). ``permission_of``: whose collaborator permission to ask.
    ``refusal_of``: whether this login was refused on the PR before. ``comment_id``: the command
    last acted on for this comment. ``pull_if_permitted``: when ``permission_of`` may command,
    the PR as GitHub sees it now and since when its head was seen (``head_seen_at``); with
    ``concluded_before`` also the PR's newest run concluded before that moment. ``workflow_run_id``:
    the stored run dispatched as this workflow run (``Facts.run``). ``run_key``: the stored run
    with this key in the event's repository (``Facts.run``) and the runs of its PR.
    ``keyed_runs``: stored runs by key (``Facts.runs``). ``dispatched_key`` with
    ``workflow_path``: when no stored run has ``workflow_run_id``, the active run with this key
    that has no workflow run yet, provided ``workflow_path`` is the App's workflow file (a
    server that dispatched without giving the run's id). ``head_sha``: the stored runs of this
    head commit in the event's repository, oldest first (``Facts.runs``). ``issue_number``: the
    tracked regression whose tracking issue this is (``Facts.regression``). ``conclusion_of``:
    what concluding the run with this key looks at (``Facts.conclusion``), with
    ``history_series`` the series its result touched and the tracked regressions, with
    ``bisect_of`` the regression it bisects. When ``permission_of`` may command: ``places_of``,
    where these commits stand against the default branch; ``config_if_permitted``, the config.
    ``association``: the comment's ``author_association`` (:func:`wants_permission`).
    """

    pr_number: int | None = None
    approved_sha: bool = False
    config: bool = False
    permission_of: str | None = None
    refusal_of: str | None = None
    comment_id: int | None = None
    pull_if_permitted: bool = False
    concluded_before: _dt.datetime | None = None
    workflow_run_id: int | None = None
    run_key: str | None = None
    keyed_runs: tuple[str, ...] = ()
    dispatched_key: str | None = None
    workflow_path: str | None = None
    head_sha: str | None = None
    issue_number: int | None = None
    conclusion_of: str | None = None
    history_series: bool = False
    bisect_of: bool = False
    places_of: tuple[str, ...] = ()
    config_if_permitted: bool = False
    association: str | None = None

    @property
    def needs_github(self) -> bool:
        """Does fetching these facts ask GitHub (an installation client is needed)?"""
        return (self.config or self.permission_of is not None or self.pull_if_permitted
                or bool(self.places_of))


# -- the rules the shell's gathering follows (pure) -----------------------------------------------
def lease_name(repository: str | None, pr_number: int | None, run: RunInfo | None = None) -> str:
    """The lease a delivery's job takes (``bot.app.job.lease``): its PR, ``owner/repo#N`` (the
    payload's ``pr_number``, else that of ``run`` of the same repository), else the repository."""
    repo = repository or "-"
    number = pr_number
    if number is None and run is not None and run.repository == repo:
        number = run.pr_number
    return f"{repo}#{number}" if number is not None else repo


def bound_run(by_id: RunInfo | None, by_name: RunInfo | None, *, repository: str, workflow_path: str | None,
              workflow: str) -> RunInfo | None:
    """The stored run a ``workflow_run`` event is about: the run dispatched with this workflow
    run's id (``by_id``), else the run its name ``perfgate <key>`` names (``by_name``) — but only
    when the workflow run is of the App's workflow file (``.github/workflows/<workflow>``, which
    only people with write access can dispatch), the run is of this repository, has no workflow
    run yet and is still active (fork safety: a workflow a PR adds cannot report for a run)."""
    if by_id is not None:
        return by_id
    if by_name is None or workflow_path != f".github/workflows/{workflow}":
        return None
    if by_name.repository != repository or by_name.workflow_run_id is not None or not by_name.active:
        return None
    return by_name


def wants_pull(request: FactRequest, permission: str | None) -> bool:
    """Is the PR fetched from GitHub (``FactRequest.pull_if_permitted``)? Only for a PR, and only
    when the sender may command: nobody else makes the App read a PR."""
    return request.pull_if_permitted and request.pr_number is not None and may_command(permission)


def wants_permission(request: FactRequest, refused_before: bool) -> bool:
    """Is ``permission_of``'s permission asked? Not of one this PR refused before whose comment is
    no owner's, member's or collaborator's: their one reply was given (security review P4)."""
    return request.permission_of is not None and not (
        refused_before and request.association not in (None, "OWNER", "MEMBER", "COLLABORATOR"))


def wants_config(request: FactRequest, permission: str | None) -> bool:
    """Is the configuration read? Declared, or for one who may command (a refusal needs none)."""
    return request.config or (request.config_if_permitted and may_command(permission))


def wants_places(request: FactRequest, permission: str | None,
                 branch: str | None) -> tuple[str, ...]:
    """The commits whose place against the default branch ``branch`` is asked (``places_of``):
    each once, for one who may command; none without a branch (unplaced commits are refused)."""
    return tuple(dict.fromkeys(request.places_of)) if may_command(permission) and branch else ()


def head_seen(stored_head: str | None, stored_seen_at: _dt.datetime | None, pull: PullInfo) -> _dt.datetime | None:
    """Since when the App knows ``pull``'s head (``Facts.head_seen_at``): the stored time, only
    when the stored head is GitHub's head now (None: never seen)."""
    return stored_seen_at if stored_head == pull.head_sha else None


def head_seen_after(stored_head: str | None, stored_seen_at: _dt.datetime | None,
                    changes: dict) -> _dt.datetime | None:
    """A PR's ``head_seen_at`` after ``SavePull`` ``changes`` (their ``head_seen_at``: when the
    event shows the head existed): the earliest time the current head is known to have been
    the head, reset to the given time (or unknown) when the head changes."""
    seen = changes.get("head_seen_at")
    if "head_sha" in changes and changes["head_sha"] != stored_head:
        return seen
    if seen is not None and (stored_seen_at is None or seen < stored_seen_at):
        return seen
    return stored_seen_at


def concluded_run(key: str, head_sha: str, doc: dict) -> ConcludedRun:
    """A concluded run as ``/perf accept`` sees it: the head it measured and the benchmarks whose
    verdict in ``doc`` (its results.json) is ``regression``, sorted."""
    regressed = {str(b.get("name")) for b in doc.get("benchmarks", []) if verdict_of(b) == "regression"}
    return ConcludedRun(key, head_sha, tuple(sorted(regressed)))


def settled_config(texts: dict[str, str | None] | None, where: str,
                   unreadable: str | None = None) -> tuple[Config, str | None]:
    """The target's configuration from its default branch's config ``texts`` (``runner.config.
    from_texts``), and why the defaults stand in for it: ``unreadable`` (GitHub refused to give the
    files), or the file is broken (the compare reports that on the runner). Returns
    ``(config, problem)``, ``problem`` None when the files were read as written."""
    if texts is None:
        return Config(), f"{where}: cannot read the perfgate config ({unreadable}); using the defaults"
    try:
        return config_from_texts(texts, where)[0], None
    except ConfigError as exc:
        return Config(), f"{where}: the perfgate config is broken ({exc}); using the defaults"
