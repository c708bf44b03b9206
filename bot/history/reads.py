"""Regression history, the storage shell's reading half: series, change points, points and the
notes and replies built from them (:mod:`bot.history.store` writes; its docstring has the terms).

Every function takes an open SQLAlchemy ``Session`` and reads one measure (``time`` unless told,
``bot.history.points.MEASURES``).
"""

from __future__ import annotations

from typing import Sequence

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, joinedload

from runner import results as results_schema

from .points import Fingerprint, fingerprint_of
from .series import ChangePoint, Point, Series, prs_merged_between
from .texts import history_table_markdown, regression_note, series_named
from .tables import (Accept, BenchmarkPoint, ChangePointRow, Environment, PullRequest, Repository,
                     Result, series_time)


# --------------------------------------------------------------------------- reading

def get_repository(session: Session, full_name: str) -> Repository | None:
    return session.scalar(select(Repository).where(Repository.full_name == full_name))


def visibility(session: Session, full_name: str) -> bool | None:
    """GitHub's ``private`` flag of ``owner/name`` as last reported (None: never reported)."""
    return session.scalar(select(Repository.private).where(Repository.full_name == full_name))


def list_repositories(session: Session) -> list[str]:
    return list(session.scalars(select(Repository.full_name).order_by(Repository.full_name)))


def _pr_dicts(session: Session, repository_id: int) -> list[dict]:
    return [{"number": p.number, "url": p.url, "title": p.title, "head_sha": p.head_sha,
             "merge_sha": p.merge_sha, "merged_at": p.merged_at}
            for p in session.scalars(select(PullRequest).where(PullRequest.repository_id == repository_id))]


def _point(row: BenchmarkPoint, pr_urls: dict[int, str | None]) -> Point:
    return Point(sha=row.sha, time=row.committed_at or row.measured_at, value=row.value,
                 ci_low=row.ci_low, ci_high=row.ci_high, kind=row.kind, pr_number=row.pr_number,
                 pr_url=pr_urls.get(row.pr_number) if row.pr_number else None,
                 fingerprint=row.environment.key, ratio=row.ratio, verdict=row.verdict,
                 run_url=row.result.run_url, benchmark=row.benchmark, measure=row.measure)


def _fingerprint_dict(env: Environment) -> dict:
    fp = Fingerprint(gpu=env.gpu, driver=env.driver, cuda=env.cuda, torch=env.torch,
                     runner_label=env.runner_label)
    return {**fp.as_dict(), "key": env.key}


def _points_query(repository_id: int, benchmarks: Sequence[str] | None, measure: str = "time"):
    """Points of one measure of a repository (of some benchmarks), with each point's environment
    and its result's ``run_url`` loaded in the same query (never the result's document)."""
    query = select(BenchmarkPoint).where(BenchmarkPoint.repository_id == repository_id,
                                         BenchmarkPoint.measure == measure).options(
        joinedload(BenchmarkPoint.environment), joinedload(BenchmarkPoint.result).load_only(Result.run_url))
    return query if benchmarks is None else query.where(BenchmarkPoint.benchmark.in_(list(benchmarks)))


def _names(benchmark: str | None, benchmarks: Sequence[str] | None) -> Sequence[str] | None:
    return [benchmark] if benchmark is not None else benchmarks


def load_series(session: Session, repository: str, benchmark: str | None = None, *,
                benchmarks: Sequence[str] | None = None, measure: str = "time") -> list[Series]:
    """Every series of ``measure`` of ``repository`` (or of one ``benchmark``, or of the names in
    ``benchmarks``), with change points and their PRs.

    Sorted by benchmark name, then by the first measurement of the fingerprint.
    """
    repo = get_repository(session, repository)
    if repo is None:
        return []
    names = _names(benchmark, benchmarks)
    query = _points_query(repo.id, names, measure).where(BenchmarkPoint.kind == "main")
    rows = session.scalars(query.order_by(series_time(), BenchmarkPoint.id)).all()
    prs = _pr_dicts(session, repo.id)
    pr_urls = {p["number"]: p["url"] for p in prs}
    grouped: dict[tuple[str, int], list[BenchmarkPoint]] = {}
    for row in rows:
        grouped.setdefault((row.benchmark, row.environment_id), []).append(row)
    cps = _change_points(session, repo.id, names, prs, measure)
    out = []
    for (bench, env_id), series_rows in grouped.items():
        out.append(Series(benchmark=bench,
                          fingerprint=_fingerprint_dict(series_rows[0].environment),
                          points=[_point(r, pr_urls) for r in series_rows],
                          change_points=cps.get((bench, env_id), []), measure=measure))
    out.sort(key=lambda s: (s.benchmark, s.points[0].time))
    return out


def _change_points(session: Session, repository_id: int, benchmarks: Sequence[str] | None,
                   prs: list[dict],
                   measure: str = "time") -> dict[tuple[str, int], list[ChangePoint]]:
    """The cached change points of ``measure`` by (benchmark, environment id), oldest first, with their PRs."""
    query = select(ChangePointRow).where(ChangePointRow.repository_id == repository_id,
                                         ChangePointRow.measure == measure)
    if benchmarks is not None:
        query = query.where(ChangePointRow.benchmark.in_(list(benchmarks)))
    out: dict[tuple[str, int], list[ChangePoint]] = {}
    for c in session.scalars(query.order_by(ChangePointRow.position)):
        out.setdefault((c.benchmark, c.environment_id), []).append(ChangePoint(
            index=c.position, sha=c.sha, prev_sha=c.prev_sha, before=c.before, after=c.after, ratio=c.ratio,
            p_value=c.p_value, time=c.measured_at, prev_time=c.prev_measured_at,
            prs=tuple(prs_merged_between(prs, c.prev_sha, c.sha, c.prev_measured_at,
                                         c.measured_at))))
    return out


def _newest_ids(repository_id: int, benchmarks: Sequence[str], *, main: bool):
    """Subquery ``(id, rank, points)``: each point of the named benchmarks ranked newest first
    within its series (``main``: per benchmark and environment) or per benchmark (PR points),
    with the number of points there."""
    partition = (BenchmarkPoint.benchmark, BenchmarkPoint.environment_id) if main else (BenchmarkPoint.benchmark,)
    newest_first = (series_time().desc(), BenchmarkPoint.id.desc())
    return (select(BenchmarkPoint.id,
                   func.row_number().over(partition_by=partition, order_by=newest_first).label("rank"),
                   func.count().over(partition_by=partition).label("points"))
            .where(BenchmarkPoint.repository_id == repository_id, BenchmarkPoint.benchmark.in_(list(benchmarks)),
                   BenchmarkPoint.measure == "time",
                   BenchmarkPoint.kind == "main" if main else BenchmarkPoint.kind == "pr")
            .subquery())


def latest_of_series(session: Session, repository: str,
                     benchmarks: Sequence[str]) -> tuple[list[Series], dict[tuple[str, str], int]]:
    """The series of the named benchmarks, each holding only its newest point (and its change
    points), and how many points each has, by (benchmark, fingerprint key): a row of the
    repository page read in SQL, however long the series. Sorted as :func:`load_series`."""
    repo = get_repository(session, repository)
    if repo is None or not benchmarks:
        return [], {}
    ranked = _newest_ids(repo.id, benchmarks, main=True)
    rows = session.execute(_points_query(repo.id, None).add_columns(ranked.c.points)
                           .join(ranked, ranked.c.id == BenchmarkPoint.id).where(ranked.c.rank == 1)).all()
    prs = _pr_dicts(session, repo.id)
    pr_urls = {p["number"]: p["url"] for p in prs}
    cps = _change_points(session, repo.id, benchmarks, prs)
    series, counts = [], {}
    for row, points in rows:
        fingerprint = _fingerprint_dict(row.environment)
        series.append(Series(benchmark=row.benchmark, fingerprint=fingerprint,
                             points=[_point(row, pr_urls)],
                             change_points=cps.get((row.benchmark, row.environment_id), [])))
        counts[(row.benchmark, fingerprint["key"])] = points
    series.sort(key=lambda s: (s.benchmark, s.points[0].time))
    return series, counts


def latest_main_points(session: Session, repository: str, benchmarks: Sequence[str],
                       fingerprint_key: str) -> dict[str, Point]:
    """``{benchmark: its newest default-branch time point}`` in the environment ``fingerprint_key``
    (what a benchmark a PR's compare skipped carries forward, :func:`.series.carry_forward`)."""
    series, _ = latest_of_series(session, repository, list(benchmarks))
    return {s.benchmark: s.points[0] for s in series if s.fingerprint.get("key") == fingerprint_key and s.points}


def latest_pr_points(session: Session, repository: str, benchmarks: Sequence[str]) -> list[Point]:
    """The newest PR point of each named benchmark (one query, however many PRs), oldest first."""
    repo = get_repository(session, repository)
    if repo is None or not benchmarks:
        return []
    ranked = _newest_ids(repo.id, benchmarks, main=False)
    rows = session.scalars(_points_query(repo.id, None).join(ranked, ranked.c.id == BenchmarkPoint.id)
                           .where(ranked.c.rank == 1)
                           .order_by(series_time(), BenchmarkPoint.id)).all()
    pr_urls = {p["number"]: p["url"] for p in _pr_dicts(session, repo.id)}
    return [_point(r, pr_urls) for r in rows]


def load_change_points(session: Session, repository: str) -> list[Series]:
    """Every series of ``repository`` with its change points but without its points (``points``
    empty): what alerts and the recent change points need, read from the cached change points
    only, however long the series are. Sorted by benchmark name, then fingerprint key."""
    repo = get_repository(session, repository)
    if repo is None:
        return []
    cps = _change_points(session, repo.id, None, _pr_dicts(session, repo.id))
    envs = {e.id: e for e in session.scalars(select(Environment).where(
        Environment.id.in_({env_id for _, env_id in cps})))} if cps else {}
    out = [Series(benchmark=bench, fingerprint=_fingerprint_dict(envs[env_id]), points=[],
                  change_points=points) for (bench, env_id), points in cps.items()]
    out.sort(key=lambda s: (s.benchmark, s.fingerprint.get("key") or ""))
    return out


def benchmark_names(session: Session, repository: str, *, offset: int = 0, limit: int | None = None) -> list[str]:
    """Names of the benchmarks with a default-branch series in ``repository``, sorted; the
    ``limit`` names from ``offset`` (one page, read in SQL)."""
    repo = get_repository(session, repository)
    if repo is None:
        return []
    query = (select(BenchmarkPoint.benchmark).where(BenchmarkPoint.repository_id == repo.id,
                                                    BenchmarkPoint.measure == "time", BenchmarkPoint.kind == "main")
             .distinct().order_by(BenchmarkPoint.benchmark).offset(offset))
    return list(session.scalars(query if limit is None else query.limit(limit)))


def load_side_points(session: Session, repository: str, benchmark: str | None = None,
                     limit: int | None = None, *, offset: int = 0,
                     benchmarks: Sequence[str] | None = None, measure: str = "time") -> list[Point]:
    """PR and compare points of ``measure`` (not part of any series), oldest first; the newest
    ``limit`` after skipping the newest ``offset`` (one page, read in SQL)."""
    repo = get_repository(session, repository)
    if repo is None:
        return []
    query = _points_query(repo.id, _names(benchmark, benchmarks), measure).where(BenchmarkPoint.kind != "main")
    query = query.order_by(BenchmarkPoint.measured_at.desc(), BenchmarkPoint.id.desc()).offset(offset)
    if limit is not None:
        query = query.limit(limit)
    pr_urls = {p["number"]: p["url"] for p in _pr_dicts(session, repo.id)}
    return [_point(r, pr_urls) for r in reversed(session.scalars(query).all())]


def pull_request_of_commit(session: Session, repository: str, sha: str) -> int | None:
    """The number of the pull request recorded as merged with commit ``sha`` (its merge commit, or
    for a rebase merge its head), or None."""
    repo = get_repository(session, repository)
    if repo is None:
        return None
    number = session.scalar(select(PullRequest.number).where(
        PullRequest.repository_id == repo.id, or_(PullRequest.merge_sha == sha, PullRequest.head_sha == sha))
        .order_by(PullRequest.number).limit(1))
    return int(number) if number is not None else None


def latest_pr_document(session: Session, repository: str, number: int) -> dict | None:
    """The newest stored compare result of pull request ``number`` (its document), or None."""
    repo = get_repository(session, repository)
    if repo is None:
        return None
    row = session.scalar(select(Result).join(PullRequest, Result.pull_request_id == PullRequest.id)
                         .where(Result.repository_id == repo.id, PullRequest.number == number)
                         .order_by(Result.measured_at.desc(), Result.id.desc()).limit(1))
    return row.document if row is not None else None


def accepts_of(session: Session, repository: str) -> list[dict]:
    """``[{pr_number, sha, benchmark, user, reason, created_at}]`` oldest first."""
    repo = get_repository(session, repository)
    if repo is None:
        return []
    return [{"pr_number": a.pr_number, "sha": a.sha, "benchmark": a.benchmark, "user": a.user,
             "reason": a.reason, "created_at": a.created_at}
            for a in session.scalars(select(Accept).where(Accept.repository_id == repo.id).order_by(Accept.id))]


def result_count(session: Session, repository: str) -> int:
    repo = get_repository(session, repository)
    if repo is None:
        return 0
    return int(session.scalar(select(func.count(Result.id)).where(Result.repository_id == repo.id)) or 0)


def regression_history_notes(session: Session, repository: str, doc: dict,
                             public_url: str | None) -> list[dict]:
    """For the PR comment: per regressed benchmark of a compare ``doc``, its history link and
    whether the change is within the historical noise of the same environment's series.

    Returns ``[{benchmark, url, ratio, within_noise, noise, pairs}]`` (``within_noise`` None
    when the history is too short or absent).
    """
    key = fingerprint_of(doc.get("environment") or {}).key
    notes = []
    for bench in doc.get("benchmarks") or []:
        change = results_schema.change_of(bench)
        if change.get("verdict") != "regression":
            continue
        series = next((s for s in load_series(session, repository, bench["name"])
                       if s.fingerprint.get("key") == key), None)
        notes.append(regression_note(repository, bench["name"], change.get("ratio"), series,
                                     public_url))
    return notes


def history_reply_markdown(session: Session, repository: str, benchmark: str | None,
                           public_url: str | None) -> str:
    """The App's reply to ``/perf history [BENCH]``: ``bot.history.texts.history_table_markdown``
    over the series of ``BENCH`` (exact name, else names containing it; all when None)."""
    series = series_named(load_series(session, repository), benchmark)
    return history_table_markdown(series, repository=repository, public_url=public_url,
                                  benchmark=benchmark)
