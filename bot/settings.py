"""The App's settings: one object, read once (from the environment or a test's mapping) by
``bot.create_app`` and by ``perfgate worker``.

=============================  ==========================================================
``DATABASE_URL``               SQLAlchemy URL (default: the SQLite file
                               ``$PERFGATE_HOME/perfgate.db``; ``bot.db``)
``PERFGATE_HOME``              where the default database and queue live
                               (default ``~/.local/share/perfgate``)
``PERFGATE_PUBLIC_URL``        where the App is reachable (links in comments, check runs);
                               unset: links are root-relative
``PERFGATE_READ_ACCESS``       who may read the pages: ``public`` (the default: public
                               repositories only) or ``all`` (``bot.app.access``)
``GITHUB_CLIENT_ID`` /         the GitHub App's OAuth credentials, for signing in with
``GITHUB_CLIENT_SECRET``       GitHub (``bot.web.signin``), with ``PERFGATE_SESSION_SECRET``
                               (at least 32 characters; signs the session cookie)
``GITHUB_APP_ID``              the App's numeric id (required for the App)
``GITHUB_PRIVATE_KEY``         the App's PEM private key, or ``GITHUB_PRIVATE_KEY_PATH``
                               naming a file with it (one of them required for the App)
``GITHUB_WEBHOOK_SECRET``      the webhook secret (required for the App)
``GITHUB_API_URL``             REST base URL (default ``https://api.github.com``; GitHub
                               Enterprise: ``https://HOST/api/v3``)
``GITHUB_SERVER_URL``          GitHub's web address (default: from ``GITHUB_API_URL``,
                               ``https://github.com`` or ``https://HOST``); links read
                               from payloads or stored results are rendered only when
                               they point under it
``HUEY_URL`` / ``REDIS_URL``   the job queue: ``redis://...`` (several machines),
                               ``sqlite:///PATH`` or unset (a SQLite file next to the
                               database, one machine), ``memory://`` (tests)
``PERFGATE_WORKFLOW``          the target's workflow file (default ``perfgate.yml``)
``PERFGATE_RUN_TIMEOUT``       seconds before a run that never reported back is marked
                               timed out (default 10800 = 3 h)
``PERFGATE_ARTIFACT_LIMIT``    largest results artifact downloaded, bytes (default 256 MiB)
``PERFGATE_DELIVERY_RETENTION`` seconds a delivery whose work ended is kept (default 604800 =
                               7 days: longer than GitHub keeps deliveries for "Redeliver")
``PERFGATE_GITHUB_TIMEOUT``    whole seconds the worker waits for each answer of
                               GitHub's API (default 20)
``TESTING``                    Flask's TESTING (and GitHub clients without retries)
=============================  ==========================================================

Without any of the App's three required settings the pages and the dashboard work and
``/webhook`` answers 503; with some but not all of them, reading the settings fails naming the
missing one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from runner.errors import UserError

from . import db

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
DEFAULT_WORKFLOW = "perfgate.yml"
DEFAULT_RUN_TIMEOUT = 3 * 3600.0
DEFAULT_ARTIFACT_LIMIT = 256 * 1024 * 1024
DEFAULT_DELIVERY_RETENTION = 7 * 86400.0
DEFAULT_GITHUB_TIMEOUT = 20
READ_ACCESS_MODES = ("public", "all")
#: The settings without which there is no GitHub App.
REQUIRED = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET")


class MissingSetting(UserError):
    """A required setting is not set; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    """Everything the web process and the worker are configured with (module docstring).

    ``database_url``: SQLAlchemy URL; ``home``: ``PERFGATE_HOME``; ``public_url``: no trailing
    slash, or None; ``read_access``: ``public`` or ``all``; ``api_url``/``github_url``: GitHub's
    REST base and web address (the only host the pages and comments link to from stored
    data); ``oauth_*``/``session_secret``: signing in with GitHub; ``app_id`` ...
    ``github_timeout``: the GitHub App (``app_id`` None: no App configured). Secrets are left
    out of ``repr``.
    """

    database_url: str
    home: Path
    public_url: str | None = None
    testing: bool = False
    read_access: str = "public"
    api_url: str = DEFAULT_API_URL
    github_url: str = DEFAULT_SERVER_URL
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = field(default=None, repr=False)
    session_secret: str | None = field(default=None, repr=False)
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    webhook_secret: str | None = field(default=None, repr=False)
    queue_url: str | None = None
    workflow: str = DEFAULT_WORKFLOW
    run_timeout: float = DEFAULT_RUN_TIMEOUT
    artifact_limit: int = DEFAULT_ARTIFACT_LIMIT
    delivery_retention: float = DEFAULT_DELIVERY_RETENTION
    github_timeout: int = DEFAULT_GITHUB_TIMEOUT

    @property
    def oauth(self) -> bool:
        """Can people sign in with GitHub?"""
        return bool(self.oauth_client_id and self.oauth_client_secret and self.session_secret)

    @property
    def has_app(self) -> bool:
        """Is the GitHub App configured (id, key and webhook secret)?"""
        return self.app_id is not None

    def require_app(self) -> "Settings":
        """``self`` when the GitHub App is configured.

        Raises:
            MissingSetting: naming ``GITHUB_APP_ID`` (no App setting is set at all).
        """
        if not self.has_app:
            raise MissingSetting("GITHUB_APP_ID is not set (the GitHub App's numeric id)")
        return self


def load_settings(source: Mapping[str, str]) -> Settings:
    """:class:`Settings` from ``source`` (``os.environ`` or a test's dict with the same keys).

    Raises:
        MissingSetting: some of the App's required settings are given, not all (names the first missing).
        UserError: a value is malformed or the key file cannot be read (the message names the variable).
    """
    public = (source.get("PERFGATE_PUBLIC_URL") or "").strip().rstrip("/") or None
    testing = str(source.get("TESTING", "")).lower() in ("1", "true", "yes")
    mode = (source.get("PERFGATE_READ_ACCESS") or "public").strip().lower()
    if mode not in READ_ACCESS_MODES:
        raise UserError(f"PERFGATE_READ_ACCESS must be public (the default: public repositories only) or all "
                        f"(everything, behind your own authentication), got {mode!r}")
    client_id = (source.get("GITHUB_CLIENT_ID") or "").strip() or None
    client_secret = (source.get("GITHUB_CLIENT_SECRET") or "").strip() or None
    session_secret = (source.get("PERFGATE_SESSION_SECRET") or "").strip() or None
    if bool(client_id) != bool(client_secret):
        raise UserError("signing in with GitHub needs both GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (the GitHub "
                        "App's OAuth credentials); one of them is not set")
    if client_id and (session_secret is None or len(session_secret) < 32):
        raise UserError("signing in with GitHub needs PERFGATE_SESSION_SECRET, at least 32 random characters "
                        "(it signs the session cookie)")
    api_url = (source.get("GITHUB_API_URL") or "").strip().rstrip("/") or DEFAULT_API_URL
    common = dict(database_url=db.database_url(source), home=db.default_home(source), public_url=public,
                  testing=testing, read_access=mode, api_url=api_url, github_url=server_url(source),
                  oauth_client_id=client_id, oauth_client_secret=client_secret, session_secret=session_secret)
    if not any((source.get(k) or "").strip() for k in (*REQUIRED, "GITHUB_PRIVATE_KEY_PATH")):
        return Settings(**common)
    if not api_url.startswith(("http://", "https://")):
        raise UserError(f"GITHUB_API_URL must be an http(s) URL, got {api_url!r}")
    return Settings(**common, **_app_settings(source))


def _app_settings(source: Mapping[str, str]) -> dict:
    """The GitHub App's fields of :class:`Settings`, validated."""
    app_id = (source.get("GITHUB_APP_ID") or "").strip()
    if not app_id:
        raise MissingSetting("GITHUB_APP_ID is not set (the GitHub App's numeric id)")
    if not app_id.isdigit():
        raise UserError(f"GITHUB_APP_ID must be the App's numeric id, got {app_id!r}")
    key = source.get("GITHUB_PRIVATE_KEY") or ""
    key_path = (source.get("GITHUB_PRIVATE_KEY_PATH") or "").strip()
    if not key.strip() and key_path:
        try:
            key = Path(key_path).expanduser().read_text("utf-8")
        except OSError as exc:
            raise UserError(f"GITHUB_PRIVATE_KEY_PATH {key_path}: {exc.strerror or exc}") from None
    if not key.strip():
        raise MissingSetting("GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_PATH) is not set (the App's PEM private key)")
    key = key.replace("\\n", "\n") if "\\n" in key and "\n" not in key.strip() else key
    if "PRIVATE KEY" not in key:
        raise UserError("GITHUB_PRIVATE_KEY is not a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
    secret = source.get("GITHUB_WEBHOOK_SECRET") or ""
    if not secret:
        raise MissingSetting("GITHUB_WEBHOOK_SECRET is not set (the App's webhook secret)")
    queue_url = (source.get("HUEY_URL") or source.get("REDIS_URL") or "").strip() or None
    if queue_url and not queue_url.startswith(("redis://", "rediss://", "unix://", "sqlite:///", "memory://")):
        raise UserError(f"HUEY_URL must be redis://..., sqlite:///PATH or memory://, got {queue_url!r}")
    workflow = (source.get("PERFGATE_WORKFLOW") or DEFAULT_WORKFLOW).strip()
    if "/" in workflow or not workflow.endswith((".yml", ".yaml")):
        raise UserError(f"PERFGATE_WORKFLOW must be a workflow file name like perfgate.yml, got {workflow!r}")
    return dict(app_id=app_id, private_key=key, webhook_secret=secret, queue_url=queue_url, workflow=workflow,
                run_timeout=_positive(source, "PERFGATE_RUN_TIMEOUT", DEFAULT_RUN_TIMEOUT),
                artifact_limit=int(_positive(source, "PERFGATE_ARTIFACT_LIMIT", DEFAULT_ARTIFACT_LIMIT)),
                github_timeout=_whole_seconds(source, "PERFGATE_GITHUB_TIMEOUT", DEFAULT_GITHUB_TIMEOUT),
                delivery_retention=_positive(source, "PERFGATE_DELIVERY_RETENTION", DEFAULT_DELIVERY_RETENTION))


def server_url(source: Mapping[str, str]) -> str:
    """GitHub's web address: ``GITHUB_SERVER_URL``, else :func:`github_web_url` of
    ``GITHUB_API_URL``; no trailing slash.

    Raises:
        UserError: ``GITHUB_SERVER_URL`` is not an ``https://`` URL.
    """
    given = (source.get("GITHUB_SERVER_URL") or "").strip().rstrip("/")
    if not given:
        return github_web_url(source.get("GITHUB_API_URL"))
    if not given.startswith("https://") or len(given) <= len("https://"):
        raise UserError(f"GITHUB_SERVER_URL must be an https:// URL, got {given!r}")
    return given


def github_web_url(api_url: str | None) -> str:
    """The GitHub web host of a REST base URL: ``https://api.github.com`` →
    ``https://github.com``; GitHub Enterprise ``https://HOST/api/v3`` → ``https://HOST``
    (GitHub's docs, "REST API endpoints for GitHub Enterprise Server"); None → github.com."""
    parts = urlsplit((api_url or DEFAULT_API_URL).strip().rstrip("/"))
    host = parts.netloc
    if host.lower() == "api.github.com":
        host = "github.com"
    elif host.lower().startswith("api.") and host.lower().endswith(".ghe.com"):  # GitHub Enterprise Cloud with data residency
        host = host[4:]
    return f"{parts.scheme}://{host}"


def _whole_seconds(source: Mapping[str, str], name: str, default: int) -> int:
    """A positive whole number of seconds (PyGithub takes its time-out as an int)."""
    value = _positive(source, name, default)
    if value != int(value):
        raise UserError(f"{name} must be a whole number of seconds, got {source.get(name)!r}")
    return int(value)


def _positive(source: Mapping[str, str], name: str, default: float) -> float:
    text = (source.get(name) or "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{name} must be a number, got {text!r}") from None
    if value <= 0:
        raise UserError(f"{name} must be > 0, got {text!r}")
    return value
