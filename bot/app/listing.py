"""Pages of the App's runs for the run list (``GET /``), read in SQL: one page's rows, never the
whole table. (Beside ``bot.app.store``, the App's other reads, which another change is editing.)"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from .tables import Run


def runs_page(session: Session, *, offset: int, limit: int) -> list[Run]:
    """Runs newest first (``created_at``, then id): ``limit`` of them after the first ``offset``."""
    query = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).offset(offset).limit(limit)
    return list(session.scalars(query))
