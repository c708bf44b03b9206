"""The App's own tables, on the declarative ``Base`` of :mod:`bot.db`.

- ``app_installations``: the GitHub App's installations (``installation*`` events).
- ``app_deliveries``: every accepted webhook delivery, de-duplicated by ``X-GitHub-Delivery``;
  the payload is kept so the background job (and a later replay) reads it from here.
- ``app_pulls``: what the App tracks per PR: SHAs, fork or not, whether the trigger label is
  on, the head SHA a maintainer approved (fork safety) and since when GitHub showed that head
  (``head_seen_at``: a ``/perf run`` must be written after it), the sticky comment's id.
- ``app_runs``: one benchmark run the App dispatched; ``key`` (deterministic, see
  ``bot.app.core.facts.run_key``) is the public run id: check run ``external_id``, the workflow's
  ``run-id`` input, the artifact name suffix, and the run page URL.
- ``app_regressions``: regressions on the default branch the App tracks (bisect, tracking issue,
  notification).
- ``app_locks``: per-PR leases that serialise the jobs of one PR.
- ``app_commands``: the last command acted on per comment (edited comments re-run only if it
  changed); ``app_refusals``: who was told once that they may not command perfgate.

GitHub ids (comments, check runs, workflow runs) exceed 2**31: BigInteger.
Schema changes go through ``bot/migrations`` (revision ``0002_app`` created these;
``0003_authority`` added ``app_pulls.head_seen_at``; ``0004_steps`` the delivery's plan,
step and ``queued_at``, the run's dispatch marks and ``app_locks``; ``0008_regressions`` the run's
runner group and ``app_regressions``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Optional

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ...db import Base, utc_now


class Installation(Base):
    __tablename__ = "app_installations"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account: Mapped[Optional[str]] = mapped_column(String(200))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[_dt.datetime] = mapped_column(default=utc_now, onupdate=utc_now)


class Delivery(Base):
    """``status``: queued | done | ignored | failed (retried: Huey, the sweep) | abandoned
    (failed for good, never swept: ``bot.app.job.executor.final_failure``); ``error`` says why.

    ``plan``: ``{"actions": [...]}``, the actions decided for it (``bot.app.core.actions.encode``),
    stored before the first is carried out; ``step``: how many of them are done. A retry carries
    out the rest of the stored plan instead of deciding again (``bot.app.job.executor``)."""

    __tablename__ = "app_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(100), unique=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[Optional[str]] = mapped_column(String(64))
    installation_id: Mapped[Optional[int]] = mapped_column(BigInteger)
    repository: Mapped[Optional[str]] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column()
    status: Mapped[str] = mapped_column(String(16), default="queued")
    error: Mapped[Optional[str]] = mapped_column(Text)
    received_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
    queued_at: Mapped[Optional[_dt.datetime]] = mapped_column(default=utc_now)  # last (re)queued
    finished_at: Mapped[Optional[_dt.datetime]] = mapped_column()
    plan: Mapped[Optional[dict[str, Any]]] = mapped_column()
    step: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class AppPull(Base):
    __tablename__ = "app_pulls"
    __table_args__ = (UniqueConstraint("repository", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[Optional[str]] = mapped_column(String(64))
    base_sha: Mapped[Optional[str]] = mapped_column(String(64))
    is_fork: Mapped[bool] = mapped_column(Boolean, default=False)
    labeled: Mapped[bool] = mapped_column(Boolean, default=False)
    approved_sha: Mapped[Optional[str]] = mapped_column(String(64))
    head_seen_at: Mapped[Optional[_dt.datetime]] = mapped_column()  # earliest event showing head_sha (approvals)
    comment_id: Mapped[Optional[int]] = mapped_column(BigInteger)
    updated_at: Mapped[_dt.datetime] = mapped_column(default=utc_now, onupdate=utc_now)


class Run(Base):
    """One dispatched benchmark run (``kind``: ``pr`` compare of a PR, ``history`` push run)."""

    __tablename__ = "app_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(40), unique=True)
    repository: Mapped[str] = mapped_column(String(200), index=True)
    installation_id: Mapped[Optional[int]] = mapped_column(BigInteger)
    pr_number: Mapped[Optional[int]] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    trigger: Mapped[str] = mapped_column(String(32))
    requested_by: Mapped[Optional[str]] = mapped_column(String(100))
    base_sha: Mapped[Optional[str]] = mapped_column(String(64))
    head_sha: Mapped[str] = mapped_column(String(64))
    base_ref: Mapped[Optional[str]] = mapped_column(String(300))
    head_ref: Mapped[Optional[str]] = mapped_column(String(300))
    filter: Mapped[Optional[str]] = mapped_column(String(500))
    rounds: Mapped[Optional[int]] = mapped_column(Integer)
    threshold: Mapped[Optional[float]] = mapped_column()
    profile: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    conclusion: Mapped[Optional[str]] = mapped_column(String(32))
    headline: Mapped[Optional[str]] = mapped_column(Text)
    check_run_id: Mapped[Optional[int]] = mapped_column(BigInteger)
    workflow_run_id: Mapped[Optional[int]] = mapped_column(BigInteger, index=True)
    workflow_run_url: Mapped[Optional[str]] = mapped_column(String(500))
    result_id: Mapped[Optional[int]] = mapped_column(ForeignKey("results.id", ondelete="SET NULL"))
    dispatch_started_at: Mapped[Optional[_dt.datetime]] = mapped_column()  # the dispatch call was made
    dispatched_at: Mapped[Optional[_dt.datetime]] = mapped_column()  # and GitHub accepted it
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
    updated_at: Mapped[_dt.datetime] = mapped_column(default=utc_now, onupdate=utc_now)
    completed_at: Mapped[Optional[_dt.datetime]] = mapped_column()
    runner: Mapped[Optional[str]] = mapped_column(String(64))  # the runner group ([runners.NAME])
    runs_on: Mapped[Optional[str]] = mapped_column(String(1100))  # its labels, comma-separated
    group_key: Mapped[Optional[str]] = mapped_column(String(40), index=True)  # the runs of one request


class Regression(Base):
    """A regression on the default branch that the App tracks (``bot.app.core.regressions``): one
    per (repository, benchmark, fingerprint, change point) or per ``/perf bisect`` request
    (``key``).

    ``status``: ``open`` (found, its bisect dispatched or to be), ``found`` (the bisect named the
    culprit), ``unresolved`` (the bisect ended without one), ``closed`` (the series recovered, or
    a maintainer accepted it: ``closed_reason``). ``issue_number`` is its tracking issue;
    ``bisect_key`` the key of its latest bisect run; ``notified_at`` when its one webhook message
    was claimed (set before it is sent: never twice)."""

    __tablename__ = "app_regressions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(40), unique=True)
    repository: Mapped[str] = mapped_column(String(200), index=True)
    installation_id: Mapped[Optional[int]] = mapped_column(BigInteger)
    benchmark: Mapped[str] = mapped_column(Text)
    also: Mapped[Optional[str]] = mapped_column(Text)  # other benchmarks that moved at the same commit, one a line
    fingerprint: Mapped[Optional[str]] = mapped_column(String(32))
    environment: Mapped[Optional[str]] = mapped_column(Text)  # the fingerprint's label
    runner: Mapped[Optional[str]] = mapped_column(String(64))
    runs_on: Mapped[Optional[str]] = mapped_column(String(1100))
    trigger: Mapped[str] = mapped_column(String(32))
    requested_by: Mapped[Optional[str]] = mapped_column(String(100))
    good_sha: Mapped[str] = mapped_column(String(64))
    bad_sha: Mapped[str] = mapped_column(String(64))
    ratio: Mapped[Optional[float]] = mapped_column()
    status: Mapped[str] = mapped_column(String(16), default="open")
    issue_number: Mapped[Optional[int]] = mapped_column(Integer)
    bisect_key: Mapped[Optional[str]] = mapped_column(String(40), index=True)
    culprit_sha: Mapped[Optional[str]] = mapped_column(String(64))
    culprit_pr: Mapped[Optional[int]] = mapped_column(Integer)
    outcome: Mapped[Optional[str]] = mapped_column(Text)  # the bisect's outcome in one line (Markdown)
    closed_reason: Mapped[Optional[str]] = mapped_column(Text)
    notified_at: Mapped[Optional[_dt.datetime]] = mapped_column()
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
    updated_at: Mapped[_dt.datetime] = mapped_column(default=utc_now, onupdate=utc_now)


class Lock(Base):
    """A lease on ``name`` (a PR: ``owner/repo#N``, else ``owner/repo``) held by one job until
    ``expires_at`` (renewed while it runs): jobs of one PR never run at the same time, and a
    killed worker's lease runs out (``bot.app.store.store.acquire_lock``)."""

    __tablename__ = "app_locks"

    name: Mapped[str] = mapped_column(String(250), primary_key=True)
    holder: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[_dt.datetime] = mapped_column()


class CommandSeen(Base):
    __tablename__ = "app_commands"
    __table_args__ = (UniqueConstraint("repository", "comment_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    comment_id: Mapped[int] = mapped_column(BigInteger)
    text: Mapped[str] = mapped_column(Text)
    login: Mapped[Optional[str]] = mapped_column(String(100))
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now, onupdate=utc_now)


class Refusal(Base):
    __tablename__ = "app_refusals"
    __table_args__ = (UniqueConstraint("repository", "pr_number", "login"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    pr_number: Mapped[int] = mapped_column(Integer)
    login: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[_dt.datetime] = mapped_column(default=utc_now)
