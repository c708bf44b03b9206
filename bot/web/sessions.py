"""Server-side sessions of people signed in with GitHub (security review N6).

The browser's cookie :data:`COOKIE` holds only a random id (:data:`ID_BYTES` bytes,
``secrets.token_urlsafe``); everything else is a row of ``web_sessions`` in the App's database
(revision ``0006_web_sessions``): the GitHub login, the user's token encrypted with a key derived
from ``PERFGATE_SESSION_SECRET`` (:class:`TokenBox`: Fernet, AES-128-CBC with HMAC-SHA256, from
``cryptography``), the cached answers "may this user read that repository", and when the session
ends (:data:`LIFETIME` after signing in, GitHub's own lifetime of a GitHub App's user token). The
row is found by the SHA-256 of the id, so the table alone signs nobody in. Signing out deletes
the row (``bot.web.signin`` also revokes the token at GitHub); an expired row is deleted when it
is next read and by :func:`purge`.

The pure parts — :func:`well_formed`, :func:`id_hash`, :func:`live` — decide from plain values;
the rest reads and writes the table through SQLAlchemy sessions of ``bot.db``.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import re
import secrets
from typing import Any, Optional

from sqlalchemy import String, Text, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from ..db import Base

#: The session cookie's name (``HttpOnly``, ``SameSite=Lax``, ``Secure`` behind https).
COOKIE = "perfgate_session"
#: Random bytes of a session id (256 bits; 43 URL-safe base64 characters).
ID_BYTES = 32
#: How long a session lasts after signing in: 8 hours, as GitHub expires a GitHub App's user
#: token (docs.github.com, "Refreshing user access tokens").
LIFETIME = _dt.timedelta(hours=8)

_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")


class WebSession(Base):
    """One signed-in browser: ``id_hash`` = SHA-256 (hex) of the cookie's id; ``token``: the
    user's GitHub token, encrypted (:class:`TokenBox`), or None; ``access``: repository →
    ``[may read, epoch seconds asked]``."""

    __tablename__ = "web_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    login: Mapped[str] = mapped_column(String(100))
    token: Mapped[Optional[str]] = mapped_column(Text)
    access: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[_dt.datetime] = mapped_column()
    expires_at: Mapped[_dt.datetime] = mapped_column(index=True)


def well_formed(value: Any) -> bool:
    """Could ``value`` be a session id this module made (a str of 43 URL-safe characters)?"""
    return isinstance(value, str) and bool(_ID.match(value))


def id_hash(value: str) -> str:
    """The key of the row of session id ``value``: SHA-256, hex."""
    return hashlib.sha256(value.encode("ascii")).hexdigest()


def live(expires_at: _dt.datetime, now: _dt.datetime) -> bool:
    """Is a session ending at ``expires_at`` still valid at ``now`` (both aware)?"""
    return now < expires_at


class TokenBox:
    """Encrypts users' GitHub tokens for the table with a key derived from ``secret``
    (``PERFGATE_SESSION_SECRET``) by HKDF-SHA256 (RFC 5869), info ``perfgate web session token``."""

    def __init__(self, secret: str):
        from cryptography.fernet import Fernet
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                   info=b"perfgate web session token").derive(secret.encode("utf-8"))
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def seal(self, token: str) -> str:
        """``token`` encrypted (a URL-safe base64 string)."""
        return self._fernet.encrypt(token.encode("utf-8")).decode("ascii")

    def open(self, sealed: str | None) -> str | None:
        """The token sealed in ``sealed``; None when it is missing, altered or sealed with another secret."""
        from cryptography.fernet import InvalidToken

        if not sealed:
            return None
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            return None


def create(session: Session, login: str, sealed_token: str | None, now: _dt.datetime) -> str:
    """A new session for ``login``; returns the id for the cookie (its row is added to ``session``)."""
    value = secrets.token_urlsafe(ID_BYTES)
    session.add(WebSession(id_hash=id_hash(value), login=login, token=sealed_token, access={}, created_at=now,
                           expires_at=now + LIFETIME))
    return value


def find(session: Session, value: Any, now: _dt.datetime) -> WebSession | None:
    """The live session of cookie value ``value``; None for anything else (a malformed value is
    not looked up; an expired row is deleted)."""
    if not well_formed(value):
        return None
    row = session.get(WebSession, id_hash(value))
    if row is None:
        return None
    if not live(row.expires_at, now):
        session.delete(row)
        return None
    return row


def end(session: Session, value: Any) -> WebSession | None:
    """Delete the session of cookie value ``value``; the deleted row (its token, to revoke), or None."""
    if not well_formed(value):
        return None
    row = session.get(WebSession, id_hash(value))
    if row is not None:
        session.delete(row)
    return row


def purge(session: Session, now: _dt.datetime) -> int:
    """Delete every session that ended before ``now``; how many."""
    return session.execute(delete(WebSession).where(WebSession.expires_at <= now)).rowcount or 0


def count(session: Session) -> int:
    """How many sessions are stored (live or not yet purged)."""
    return len(session.scalars(select(WebSession.id_hash)).all())
