"""What the App decides to do, as plain data (``bot.app.core.handlers`` returns lists of these;
``bot.app.job.effects`` carries them out, in order, against the database and GitHub).

Storage actions change the App's own tables; GitHub actions go through ``bot.app.github.gateway``.
:class:`StartRun` is deliberately one action: its steps depend on each other's answers
(the check run's id, the dispatched workflow run's id) and it is idempotent by ``spec.key``;
what follows each step of a run (dispatched, dispatch failed, results in, failed, timed out)
is decided by ``bot.app.core.conclude`` as lists of the primitive actions here.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any

from .facts import RunInfo


# -- storage ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SavePull:
    """Create or update the App's row of a PR; only the keys in ``changes`` are written."""

    repository: str
    number: int
    changes: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class SaveInstallation:
    installation_id: int
    account: str | None
    active: bool


@dataclass(frozen=True)
class UpdateRun:
    """Write ``changes`` (column → value: ``status``, ``conclusion``, ``headline``, ...) to the
    stored run ``key``."""

    key: str
    changes: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class RecordMerge:
    """A merged PR, for the history's change-point attribution (``history_store.record_pull_request``)."""

    repository: str
    number: int
    merge_sha: str | None
    merged_at: str | None
    url: str | None = None
    title: str | None = None
    head_sha: str | None = None  # the head that was merged (an accept binds to it)


@dataclass(frozen=True)
class RememberCommand:
    repository: str
    comment_id: int
    text: str
    login: str | None


@dataclass(frozen=True)
class RememberRefusal:
    repository: str
    pr_number: int
    login: str


@dataclass(frozen=True)
class RegressionSpec:
    """A regression on the default branch to track (``bot.app.core.regressions``): ``key`` (its id:
    repository, benchmark, fingerprint and change point, or the command that asked), the series
    (``benchmark``, ``fingerprint`` key and its ``environment`` label, the ``runner`` group and its
    labels ``runs_on``), the range ``good_sha``..``bad_sha`` and its ``ratio`` (after/before);
    ``trigger``: ``changepoint`` or ``command``; ``also``: other benchmarks of the same series'
    environment whose change point is the same commit (one regression, one bisect of the clearest)."""

    key: str
    repository: str
    installation_id: int | None
    benchmark: str
    good_sha: str
    bad_sha: str
    trigger: str
    fingerprint: str | None = None
    environment: str | None = None
    runner: str | None = None
    runs_on: tuple[str, ...] = ()
    ratio: float | None = None
    requested_by: str | None = None
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpenRegression:
    """Store a regression to track (nothing when its ``key`` exists)."""

    spec: RegressionSpec


@dataclass(frozen=True)
class SaveRegression:
    """Write ``changes`` (column → value: ``status``, ``bisect_key``, ``culprit_sha``, ...) to the
    tracked regression ``key``."""

    key: str
    changes: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class AcceptRegression:
    """``/perf accept``: store it (``history_store.record_accept``, one row per benchmark) and
    re-conclude the PR's latest completed run (a failure caused only by accepted regressions
    becomes success). ``sha`` is the head whose results were accepted, ``benchmarks`` the ones
    that regressed there: later pushes and other benchmarks are not covered."""

    repository: str
    pr_number: int
    sha: str
    user: str
    reason: str | None
    benchmarks: tuple[str, ...] = ()


# -- GitHub -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartRun:
    """Store the run (skip everything if ``spec.key`` exists), open the check run, dispatch the
    workflow pinned to the SHAs, post/update the sticky comment (PR runs), react 🚀."""

    spec: RunInfo


@dataclass(frozen=True)
class CancelRun:
    """Cancel the workflow run (if dispatched), conclude the check run ``cancelled`` with
    ``reason``, mark the run cancelled."""

    key: str
    reason: str


@dataclass(frozen=True)
class CancelWorkflowRun:
    """Cancel workflow run ``workflow_run_id`` of ``repository`` (cancelling one that finished is
    not an error)."""

    repository: str
    workflow_run_id: int


@dataclass(frozen=True)
class UpsertComment:
    """Create or edit the single sticky comment (``<!-- perfgate -->``) of a PR."""

    repository: str
    pr_number: int
    body: str


@dataclass(frozen=True)
class DeleteComment:
    """Delete comment ``comment_id`` of PR ``pr_number`` (a duplicate sticky comment)."""

    repository: str
    pr_number: int
    comment_id: int


@dataclass(frozen=True)
class Reply:
    """A new, separate comment on a PR (answers to commands)."""

    repository: str
    pr_number: int
    body: str


@dataclass(frozen=True)
class ReplyHistory:
    """Reply to ``/perf history [BENCH]`` with the stored history (needs the database)."""

    repository: str
    pr_number: int
    benchmark: str | None


@dataclass(frozen=True)
class React:
    """``content``: +1, -1, laugh, confused, heart, hooray, rocket, eyes (on a PR's comment)."""

    repository: str
    pr_number: int
    comment_id: int
    content: str


@dataclass(frozen=True)
class UpdateCheckRun:
    """Update check run ``check_run_id`` of ``repository`` (``fields``: ``status``,
    ``conclusion``, ``title``, ``summary``, ``details_url``, ``actions``; GitHub's check-run API)."""

    repository: str
    check_run_id: int
    fields: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MarkInProgress:
    """The dispatched workflow started on a runner: check run and run become ``in_progress``."""

    key: str
    workflow_url: str | None


@dataclass(frozen=True)
class Ingest:
    """A dispatched workflow finished: download its results artifact, store, report, conclude."""

    key: str
    workflow_run_id: int
    workflow_conclusion: str | None
    workflow_url: str | None


@dataclass(frozen=True)
class UpsertTrackingIssue:
    """Create or edit the tracking issue of regression ``key`` (found by the hidden mark of its
    key when the App does not know its number yet), with ``title`` and ``body``; ``close``: close
    it (``completed`` or ``not_planned``), else leave its state alone."""

    repository: str
    key: str
    title: str
    body: str
    close: str | None = None


@dataclass(frozen=True)
class CommentOnCulprit:
    """Post ``body`` on pull request ``pr_number`` (the culprit's) once: a comment carrying the
    hidden mark of regression ``key`` and bisect ``bisect_key`` is not posted again."""

    repository: str
    key: str
    bisect_key: str
    pr_number: int
    body: str


@dataclass(frozen=True)
class Notify:
    """Send regression ``key``'s one message (``text``) to the default branch's
    ``regression_webhook``; never twice (``app_regressions.notified_at``)."""

    repository: str
    key: str
    text: str


Action = (SavePull | SaveInstallation | UpdateRun | RecordMerge | RememberCommand | RememberRefusal | AcceptRegression
          | StartRun | CancelRun | CancelWorkflowRun | UpsertComment | DeleteComment | Reply | ReplyHistory | React
          | UpdateCheckRun | MarkInProgress | Ingest | OpenRegression | SaveRegression | UpsertTrackingIssue
          | CommentOnCulprit | Notify)


#: What a stored plan may name: the actions and the values they carry. ``RunSpec`` is what plans
#: stored before a run had one description (:class:`~bot.app.core.facts.RunInfo`) call it: always
#: read.
_ENCODED = {"RunSpec": RunInfo,
            **{cls.__name__: cls for cls in (RunInfo, RegressionSpec, *Action.__args__)}}


def encode(action: Action) -> dict[str, Any]:
    """``action`` as JSON-safe data, losslessly: ``{"$type": "StartRun", ...fields}``; tuples
    and datetimes tagged (``{"$tuple": [...]}``, ``{"$datetime": ISO 8601}``). The delivery's
    stored plan (``bot.app.store.tables.Delivery.plan``) is a list of these."""
    return _encode(action)


def decode(data: dict[str, Any]) -> Action:
    """The action :func:`encode` made ``data`` from.

    Raises:
        ValueError: ``data`` names no known action.
    """
    value = _decode(data)
    if not isinstance(value, Action.__args__):
        raise ValueError(f"not an action: {str(data)[:200]}")
    return value


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$type": type(value).__name__,
                **{f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, _dt.datetime):
        return {"$datetime": value.isoformat()}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tuple" in value:
        return tuple(_decode(v) for v in value["$tuple"])
    if "$datetime" in value:
        return _dt.datetime.fromisoformat(value["$datetime"])
    if "$type" in value:
        cls = _ENCODED.get(value["$type"])
        if cls is None:
            raise ValueError(f"unknown action type {value['$type']!r}")
        return cls(**{k: _decode(v) for k, v in value.items() if k != "$type"})
    return {k: _decode(v) for k, v in value.items()}


def dispatch_inputs(spec: RunInfo) -> dict[str, str]:
    """The ``workflow_dispatch`` inputs of a run (examples/workflows/perfgate.yml): the exact
    SHAs, the PR number and the run id always; ``filter``, ``rounds``, ``threshold``,
    ``profile`` and ``all`` (``/perf run --all``) only when the command set them, ``force-run``
    (a JSON list: the selection misses, ``bot.app.core.regressions.selection_misses``) only when
    there are any, ``runs-on`` (a JSON list of labels) and ``runner`` only for a run on a runner
    group, ``bisect`` only for a bisect (GitHub rejects inputs a workflow does not declare, so a
    plain run works with the minimal workflow)."""
    inputs = {"base-sha": spec.base_sha or spec.head_sha, "head-sha": spec.head_sha, "run-id": spec.key}
    if spec.pr_number is not None:
        inputs["pr-number"] = str(spec.pr_number)
    if spec.filter:
        inputs["filter"] = spec.filter
    if spec.rounds:
        inputs["rounds"] = str(spec.rounds)
    if spec.threshold:
        inputs["threshold"] = f"{spec.threshold:g}"
    if spec.profile:
        inputs["profile"] = "true"
    if spec.all_benchmarks:
        inputs["all"] = "true"
    if spec.force_run:
        inputs["force-run"] = json.dumps(list(spec.force_run))
    if spec.runs_on:
        inputs["runs-on"] = json.dumps(list(spec.runs_on))
    if spec.runner:
        inputs["runner"] = spec.runner
    if spec.kind == "bisect":
        inputs["bisect"] = "true"
    return inputs
