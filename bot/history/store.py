"""Regression history, the storage shell: results in, series and change points out (this module
writes; :mod:`bot.history.reads` reads).

Every function takes an open SQLAlchemy ``Session`` and leaves committing to the caller
(``with db.session() as s, s.begin(): ...``). Decisions are made by the pure modules
``bot.history.points``, ``series`` and ``changepoints``; this module only reads and writes rows.

Every function that reads series or points reads one measure (``time`` unless told,
``bot.history.points.MEASURES``): the pages, alerts and notes of the time series are as they were
before memory was measured.

Incremental change points: storing a result touches only the series of its ``main``
points. For each such series, when the new point is the latest one, the cached change
points are updated with ``changepoints.update`` (only the tail after the second-to-last
change point is segmented again); a point that lands before the end of its series (an
out-of-order upload) triggers a full ``changepoints.detect`` of that series.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from runner import results as results_schema
from runner.errors import UserError

from ..db import insert_missing
from . import changepoints
from .points import (Fingerprint, fingerprint_of, is_repository_name, parse_time, points_of,
                     pull_request_of, result_kind)
from .reads import get_repository
from .tables import (Accept, BenchmarkPoint, ChangePointRow, Environment, PullRequest, Repository,
                     Result, series_time, utc_now)


# --------------------------------------------------------------------------- writing

def get_or_create_repository(session: Session, full_name: str) -> Repository:
    """The ``repositories`` row of ``owner/name``, created when missing (``INSERT … ON
    CONFLICT DO NOTHING``: concurrent first writers do not collide).

    Raises:
        UserError: ``full_name`` is not ``owner/name``.
    """
    if not is_repository_name(full_name):
        raise UserError(f"{full_name!r} is not a repository name of the form OWNER/NAME")
    repo = get_repository(session, full_name)
    if repo is None:  # two jobs may create it at once: insert-or-nothing, then read (review N10)
        insert_missing(session, Repository, {"full_name": full_name}, ("full_name",))
        repo = get_repository(session, full_name)
    return repo


def record_pull_request(session: Session, repository: Repository, number: int, *, url: str | None = None,
                        title: str | None = None, head_sha: str | None = None, merge_sha: str | None = None,
                        merged_at: _dt.datetime | None = None) -> PullRequest:
    """Create or update what is known of PR ``number``; given (non-None) fields overwrite.

    The App calls this on ``pull_request`` events (``closed`` with ``merged``: pass
    ``merge_sha=merge_commit_sha`` and ``merged_at``) so change points can name their PRs.
    """
    query = select(PullRequest).where(PullRequest.repository_id == repository.id, PullRequest.number == number)
    pr = session.scalar(query)
    if pr is None:
        insert_missing(session, PullRequest, {"repository_id": repository.id, "number": number},
                       ("repository_id", "number"))
        pr = session.scalar(query)
    for name, value in (("url", url), ("title", title), ("head_sha", head_sha), ("merge_sha", merge_sha),
                        ("merged_at", merged_at)):
        if value is not None:
            setattr(pr, name, value)
    session.flush()
    return pr


def _environment(session: Session, fp: Fingerprint) -> Environment:
    env = session.scalar(select(Environment).where(Environment.key == fp.key))
    if env is None:  # results of two PRs on a new runner may arrive at once
        insert_missing(session, Environment, {"key": fp.key, "gpu": fp.gpu, "driver": fp.driver, "cuda": fp.cuda,
                                              "torch": fp.torch, "runner_label": fp.runner_label}, ("key",))
        env = session.scalar(select(Environment).where(Environment.key == fp.key))
    return env


def content_sha256(doc: dict) -> str:
    """SHA-256 of the canonical JSON of a document (the same result stored twice is one row)."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def resolve_repository_name(doc: dict, repository: str | None) -> str:
    """The ``owner/name`` a result belongs to: ``repository`` if given, else the document's.

    Raises:
        UserError: neither is of the form OWNER/NAME (a local compare stores a path).
    """
    name = repository or doc.get("repository") or ""
    if not is_repository_name(name):
        if repository:
            raise UserError(f"--repository {repository!r} is not of the form OWNER/NAME")
        raise UserError(f"the result's repository {name!r} is not OWNER/NAME; pass --repository OWNER/NAME")
    return name


@dataclass
class AddOutcome:
    """What :func:`add_result` did. ``series``: ``(benchmark, fingerprint key)`` of the time series
    updated; ``memory_series`` and ``compile_series`` those of the memory and compile-time series."""

    result_id: int
    repository: str
    created: bool
    kind: str
    points: int = 0
    series: list[tuple[str, str]] = field(default_factory=list)
    memory_series: list[tuple[str, str]] = field(default_factory=list)
    compile_series: list[tuple[str, str]] = field(default_factory=list)
    change_points: int = 0

    def updated(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """``[(measure, series updated)]`` for every measure (``bot.history.points.MEASURES``)."""
        return [("time", self.series), ("memory", self.memory_series), ("compile", self.compile_series)]


def add_result(session: Session, doc: dict, repository: str | None = None, *, validated: bool = False) -> AddOutcome:
    """Store a results.json document (validated first) with its points; update change points.

    Args:
        doc: a schema_version 1 document; optional top-level ``pull_request`` ``{number,
            url, title?, merge_commit_sha?, merged_at?}`` and ``run_url``.
        repository: ``owner/name``; default the document's ``repository``.
        validated: the caller validated ``doc`` where it came in (the App's ingest, the
            history CLI's reading of a file): not again — a full validation of a large
            document takes seconds (security review F13).
    Returns:
        :class:`AddOutcome` (``created`` False when this exact document was stored before).
    Raises:
        UserError (ResultsError): the document is not valid, or has no usable repository.
    """
    if not validated:
        results_schema.validate(doc)
    name = resolve_repository_name(doc, repository)
    repo = get_or_create_repository(session, name)
    digest = content_sha256(doc)
    existing = session.scalar(select(Result).where(Result.repository_id == repo.id,
                                                   Result.content_sha256 == digest))
    kind = result_kind(doc)
    if existing is not None:
        return AddOutcome(result_id=existing.id, repository=name, created=False, kind=kind)

    fp = fingerprint_of(doc.get("environment") or {})
    env = _environment(session, fp)
    head, base = doc.get("head") or {}, doc.get("base") or {}
    pr = _document_pull_request(session, repo, doc)
    result = Result(repository_id=repo.id, pull_request_id=pr.id if pr else None, environment_id=env.id,
                    kind=kind, head_sha=head.get("sha"), head_ref=head.get("ref"), base_sha=base.get("sha"),
                    base_ref=base.get("ref"), run_url=doc.get("run_url"),
                    measured_at=parse_time(doc.get("created_at")) or utc_now(),
                    content_sha256=digest, document=doc)
    session.add(result)
    session.flush()

    outcome = AddOutcome(result_id=result.id, repository=name, created=True, kind=kind)
    _add_points(session, doc, result, pr.number if pr else None, fp.key, outcome)
    for measure, updated in outcome.updated():
        for bench, _key in updated:
            outcome.change_points += refresh_change_points(session, repo.id, bench, env.id,
                                                           new_result_id=result.id, measure=measure)
    return outcome


def _document_pull_request(session: Session, repo: Repository, doc: dict) -> PullRequest | None:
    """The pull request a document names (``pull_request``), recorded with what the document
    says of it (head sha, merge); None when it names none."""
    pr_doc = pull_request_of(doc)
    if not pr_doc:
        return None
    return record_pull_request(session, repo, pr_doc["number"], url=pr_doc.get("url"),
                               title=pr_doc.get("title"),
                               head_sha=(doc.get("head") or {}).get("sha"),
                               merge_sha=pr_doc.get("merge_commit_sha"),
                               merged_at=parse_time(pr_doc.get("merged_at")))


def _add_points(session: Session, doc: dict, result: Result, pr_number: int | None,
                fingerprint_key: str, outcome: AddOutcome) -> None:
    """Store the document's points (:func:`bot.history.points.points_of`), one per benchmark,
    measure and result (the first where a name repeats); count them in ``outcome`` and list the
    series each ``main`` point updates."""
    seen: set[tuple[str, str]] = set()
    for rec in points_of(doc):
        if (rec.benchmark, rec.measure) in seen:
            continue
        seen.add((rec.benchmark, rec.measure))
        session.add(BenchmarkPoint(result_id=result.id, repository_id=result.repository_id,
                                   environment_id=result.environment_id, benchmark=rec.benchmark,
                                   measure=rec.measure, kind=rec.kind, sha=rec.sha,
                                   pr_number=pr_number, measured_at=result.measured_at,
                                   committed_at=parse_time(
                                       (doc.get("head") or {}).get("committed_at")),
                                   value=rec.value, ci_low=rec.ci_low, ci_high=rec.ci_high,
                                   ratio=rec.ratio, verdict=rec.verdict))
        outcome.points += 1
        if rec.kind == "main":
            dict(outcome.updated())[rec.measure].append((rec.benchmark, fingerprint_key))
    session.flush()


def _series_rows(session: Session, repository_id: int, benchmark: str, environment_id: int,
                 measure: str = "time") -> list[BenchmarkPoint]:
    return list(session.scalars(
        select(BenchmarkPoint).where(BenchmarkPoint.repository_id == repository_id,
                                     BenchmarkPoint.benchmark == benchmark,
                                     BenchmarkPoint.measure == measure,
                                     BenchmarkPoint.environment_id == environment_id,
                                     BenchmarkPoint.kind == "main")
        .order_by(series_time(), BenchmarkPoint.id)))


def refresh_change_points(session: Session, repository_id: int, benchmark: str, environment_id: int, *,
                          new_result_id: int | None = None, measure: str = "time") -> int:
    """Recompute the cached change points of one series (of ``measure``); returns how many it has now.

    Incremental (``changepoints.update``) when the point of ``new_result_id`` is the last
    of the series, else a full ``changepoints.detect``.
    """
    rows = _series_rows(session, repository_id, benchmark, environment_id, measure)
    of_series = (ChangePointRow.repository_id == repository_id, ChangePointRow.benchmark == benchmark,
                 ChangePointRow.measure == measure, ChangePointRow.environment_id == environment_id)
    cached = list(session.scalars(select(ChangePointRow).where(*of_series).order_by(ChangePointRow.position)))
    values = [r.value for r in rows]
    appended = new_result_id is not None and rows and rows[-1].result_id == new_result_id
    if appended and cached:
        previous = [changepoints.Split(index=c.position, before=c.before, after=c.after, ratio=c.ratio,
                                       p_value=c.p_value) for c in cached]
        splits = changepoints.update(values, previous)
    else:
        splits = changepoints.detect(values)
    session.execute(delete(ChangePointRow).where(*of_series))
    for s in splits:
        here, prev = rows[s.index], rows[s.index - 1]
        session.add(ChangePointRow(repository_id=repository_id, environment_id=environment_id, benchmark=benchmark,
                                   measure=measure, position=s.index, sha=here.sha, prev_sha=prev.sha,
                                   measured_at=here.measured_at, prev_measured_at=prev.measured_at,
                                   before=s.before, after=s.after, ratio=s.ratio, p_value=s.p_value))
    session.flush()
    return len(splits)


def record_accept(session: Session, repository: str, *, user: str, pr_number: int | None = None,
                  sha: str | None = None, benchmark: str | None = None, reason: str | None = None) -> Accept:
    """Record ``/perf accept``: ``user`` acknowledged the regression of a PR (or a commit).

    ``benchmark`` None accepts every regressed benchmark of that PR. Returns the row.

    Raises:
        UserError: neither ``pr_number`` nor ``sha`` given, or a bad repository name.
    """
    if pr_number is None and not sha:
        raise UserError("an accept needs a PR number or a commit SHA")
    repo = get_or_create_repository(session, repository)
    row = Accept(repository_id=repo.id, pr_number=pr_number, sha=sha, benchmark=benchmark, user=user,
                 reason=reason)
    session.add(row)
    session.flush()
    return row
