"""The App's settings, read once (from a mapping or the environment) by ``create_app``.

Issue 7 needs only the database and the public URL; the App's GitHub settings
(``GITHUB_APP_ID``, ``GITHUB_WEBHOOK_SECRET``, ...) join this dataclass with issue 6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import db
from .app_settings import DEFAULT_SERVER_URL, server_url


@dataclass(frozen=True)
class Settings:
    """``database_url``: SQLAlchemy URL (``DATABASE_URL``, else ``$PERFGATE_HOME/perfgate.db``);
    ``public_url``: where the App is reachable, for links in comments (``PERFGATE_PUBLIC_URL``,
    no trailing slash; None: links are root-relative); ``testing``: Flask's TESTING;
    ``github_url``: GitHub's web address (``bot.app_settings.server_url``), the only host
    the pages link to from stored data."""

    database_url: str
    public_url: str | None = None
    testing: bool = False
    github_url: str = DEFAULT_SERVER_URL


def load_settings(source: Mapping[str, str]) -> Settings:
    """Settings from ``source`` (``os.environ`` or a test's dict with the same keys).

    Raises:
        runner.errors.UserError: a value is malformed (the message names the variable).
    """
    public = (source.get("PERFGATE_PUBLIC_URL") or "").strip().rstrip("/") or None
    testing = str(source.get("TESTING", "")).lower() in ("1", "true", "yes")
    return Settings(database_url=db.database_url(source), public_url=public, testing=testing,
                    github_url=server_url(source))
