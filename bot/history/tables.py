"""The regression history's tables (SQLAlchemy 2, typed declarative, on ``bot.db.Base``).

- ``repositories``: one row per ``owner/name``, with its visibility on GitHub when known and
  the receipt time of the evidence for it.
- ``pull_requests``: what is known of a PR (number, URL, title, head/merge SHA, merge time).
  The App keeps its own per-PR state in ``app_pulls`` (``bot.app.store.tables``).
- ``environments``: one row per environment fingerprint (GPU model, driver, CUDA, torch,
  runner label; ``bot.history.points.Fingerprint``), so series can be labelled.
- ``results``: every stored results.json document, verbatim, linked to its PR when there is
  one. The bot re-renders only from ``document``.
- ``benchmark_points``: one measured value per (result, benchmark, measure): ``time`` (median
  seconds per call with its confidence interval) or ``memory`` (peak bytes, the median over the
  processes, with their range); a series is the ``main`` points of one (repository, benchmark,
  measure, fingerprint), ordered by ``measured_at`` then ``id``.
- ``change_points``: the cached detection result per series (recomputed when a point arrives).
- ``accepts``: who accepted which regression (``/perf accept``).

Everything is dialect-neutral (SQLite and PostgreSQL): generic types, timezone-aware
timestamps through ``bot.db.UTCDateTime``, named constraints for Alembic.
Schema changes go through ``bot/migrations`` (a test checks migrations == these models).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Optional

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ..db import Base, utc_now


class Repository(Base):
    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    full_name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
    # GitHub's repository.private from the App's webhooks; None: never reported (pages treat it
    # as private, bot.app.core.access). It moves only on newer evidence
    # (bot.app.core.access.next_visibility): private_at, when the newest delivery that reported it
    # was received; publicized_at, when the newest `repository publicized` delivery that made it
    # public was received.
    private: Mapped[Optional[bool]] = mapped_column(Boolean)
    private_at: Mapped[Optional[_dt.datetime]] = mapped_column()
    publicized_at: Mapped[Optional[_dt.datetime]] = mapped_column()

    results: Mapped[list["Result"]] = relationship(back_populates="repository")


class PullRequest(Base):
    __tablename__ = "pull_requests"
    __table_args__ = (UniqueConstraint("repository_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    url: Mapped[Optional[str]] = mapped_column(String(500))
    title: Mapped[Optional[str]] = mapped_column(Text)
    head_sha: Mapped[Optional[str]] = mapped_column(String(64))
    merge_sha: Mapped[Optional[str]] = mapped_column(String(64), index=True)
    merged_at: Mapped[Optional[_dt.datetime]] = mapped_column()

    repository: Mapped[Repository] = relationship()


class Environment(Base):
    """One environment fingerprint; ``key`` is ``bot.history.points.Fingerprint.key``."""

    __tablename__ = "environments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(32), unique=True)
    gpu: Mapped[Optional[str]] = mapped_column(String(200))
    driver: Mapped[Optional[str]] = mapped_column(String(100))
    cuda: Mapped[Optional[str]] = mapped_column(String(100))
    torch: Mapped[Optional[str]] = mapped_column(String(100))
    runner_label: Mapped[Optional[str]] = mapped_column(String(200))


class Result(Base):
    """A stored results.json (``kind``: ``run`` single revision, or ``compare``)."""

    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("repository_id", "content_sha256"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"), index=True)
    pull_request_id: Mapped[Optional[int]] = mapped_column(
        ForeignKey("pull_requests.id", ondelete="SET NULL"), index=True)
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    kind: Mapped[str] = mapped_column(String(16))
    head_sha: Mapped[Optional[str]] = mapped_column(String(64))
    head_ref: Mapped[Optional[str]] = mapped_column(String(300))
    base_sha: Mapped[Optional[str]] = mapped_column(String(64))
    base_ref: Mapped[Optional[str]] = mapped_column(String(300))
    run_url: Mapped[Optional[str]] = mapped_column(String(500))
    measured_at: Mapped[_dt.datetime] = mapped_column()
    stored_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
    content_sha256: Mapped[str] = mapped_column(String(64))
    #: Loaded only when read (deferred): lists and charts need the row, never the document.
    document: Mapped[dict[str, Any]] = mapped_column(deferred=True)

    repository: Mapped[Repository] = relationship(back_populates="results")
    pull_request: Mapped[Optional[PullRequest]] = relationship()
    environment: Mapped[Environment] = relationship()


class BenchmarkPoint(Base):
    """One benchmark's measured value in one result.

    ``kind``: ``main`` (a single-revision run: the history series), ``pr`` (a PR head) or
    ``compare`` (a compare head without a PR). ``measure``: ``time`` (values are seconds per
    call) or ``memory`` (peak bytes, ``bot.history.points.MEASURES``).
    """

    __tablename__ = "benchmark_points"
    __table_args__ = (
        UniqueConstraint("result_id", "benchmark", "measure"),
        Index("ix_benchmark_points_series", "repository_id", "benchmark", "measure", "environment_id", "kind",
              "measured_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    benchmark: Mapped[str] = mapped_column(String(500))
    measure: Mapped[str] = mapped_column(String(16), default="time", server_default="time")
    kind: Mapped[str] = mapped_column(String(16))
    sha: Mapped[Optional[str]] = mapped_column(String(64))
    pr_number: Mapped[Optional[int]] = mapped_column(Integer)
    measured_at: Mapped[_dt.datetime] = mapped_column()
    #: the measured commit's committer date where the result recorded it (``head.committed_at``)
    committed_at: Mapped[Optional[_dt.datetime]] = mapped_column(nullable=True)
    value: Mapped[float] = mapped_column()
    ci_low: Mapped[Optional[float]] = mapped_column()
    ci_high: Mapped[Optional[float]] = mapped_column()
    ratio: Mapped[Optional[float]] = mapped_column()
    verdict: Mapped[Optional[str]] = mapped_column(String(16))

    result: Mapped[Result] = relationship()
    environment: Mapped[Environment] = relationship()


def series_time():
    """The order of a history series (an SQL expression): the commit's time where the result
    recorded it, else when it was measured — commit order, so that a parent measured after its
    child (a backfill) sits before it and draws no false change (issue 47)."""
    return func.coalesce(BenchmarkPoint.committed_at, BenchmarkPoint.measured_at)


class ChangePointRow(Base):
    """A detected change point of one series (cache; rebuilt by ``bot.history.store``)."""

    __tablename__ = "change_points"
    __table_args__ = (Index("ix_change_points_series", "repository_id", "benchmark", "measure", "environment_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    benchmark: Mapped[str] = mapped_column(String(500))
    measure: Mapped[str] = mapped_column(String(16), default="time", server_default="time")
    position: Mapped[int] = mapped_column(Integer)
    sha: Mapped[Optional[str]] = mapped_column(String(64))
    prev_sha: Mapped[Optional[str]] = mapped_column(String(64))
    measured_at: Mapped[_dt.datetime] = mapped_column()
    prev_measured_at: Mapped[_dt.datetime] = mapped_column()
    before: Mapped[float] = mapped_column()
    after: Mapped[float] = mapped_column()
    ratio: Mapped[float] = mapped_column()
    p_value: Mapped[float] = mapped_column()
    detected_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)

    environment: Mapped[Environment] = relationship()


class Accept(Base):
    """``/perf accept``: ``user`` acknowledged a regression of PR ``pr_number`` at ``sha``.

    ``benchmark`` None means every regressed benchmark of that PR.
    """

    __tablename__ = "accepts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"), index=True)
    pr_number: Mapped[Optional[int]] = mapped_column(Integer)
    sha: Mapped[Optional[str]] = mapped_column(String(64))
    benchmark: Mapped[Optional[str]] = mapped_column(String(500))
    user: Mapped[str] = mapped_column(String(100))
    reason: Mapped[Optional[str]] = mapped_column(Text)
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
