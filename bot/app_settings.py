"""The GitHub App's settings, read once from the environment (or a test's mapping).

=============================  ==========================================================
``GITHUB_APP_ID``              the App's numeric id (required)
``GITHUB_PRIVATE_KEY``         the App's PEM private key, or ``GITHUB_PRIVATE_KEY_PATH``
                               naming a file with it (one of them required)
``GITHUB_WEBHOOK_SECRET``      the webhook secret (required)
``GITHUB_API_URL``             REST base URL (default ``https://api.github.com``; GitHub
                               Enterprise: ``https://HOST/api/v3``)
``GITHUB_SERVER_URL``          GitHub's web address (default: from ``GITHUB_API_URL``,
                               ``https://github.com`` or ``https://HOST``); links read
                               from payloads or stored results are rendered only when
                               they point under it
``HUEY_URL`` / ``REDIS_URL``   the job queue: ``redis://...`` (several machines),
                               ``sqlite:///PATH`` or unset (a SQLite file next to the
                               database, one machine), ``memory://`` (tests)
``PERFGATE_PUBLIC_URL``        where the App is reachable (links in comments, check runs)
``PERFGATE_WORKFLOW``          the target's workflow file (default ``perfgate.yml``)
``PERFGATE_RUN_TIMEOUT``       seconds before a run that never reported back is marked
                               timed out (default 10800 = 3 h)
``PERFGATE_ARTIFACT_LIMIT``    largest results artifact downloaded, bytes (default 256 MiB)
=============================  ==========================================================

``DATABASE_URL`` / ``PERFGATE_HOME`` are read by ``bot.config`` (shared with the history).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from runner.errors import UserError

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
DEFAULT_WORKFLOW = "perfgate.yml"
DEFAULT_RUN_TIMEOUT = 3 * 3600.0
DEFAULT_ARTIFACT_LIMIT = 256 * 1024 * 1024
REQUIRED = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET")


class MissingSetting(UserError):
    """A required setting is not set; the message names the variable."""


@dataclass(frozen=True)
class AppSettings:
    app_id: str
    private_key: str
    webhook_secret: str
    api_url: str = DEFAULT_API_URL
    queue_url: str | None = None
    public_url: str | None = None
    github_url: str = DEFAULT_SERVER_URL
    workflow: str = DEFAULT_WORKFLOW
    run_timeout: float = DEFAULT_RUN_TIMEOUT
    artifact_limit: int = DEFAULT_ARTIFACT_LIMIT

    def __repr__(self) -> str:  # never print secrets
        return f"AppSettings(app_id={self.app_id!r}, api_url={self.api_url!r}, public_url={self.public_url!r})"



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
    from urllib.parse import urlsplit

    parts = urlsplit((api_url or DEFAULT_API_URL).strip().rstrip("/"))
    host = parts.netloc
    if host.lower() == "api.github.com":
        host = "github.com"
    elif host.lower().startswith("api.") and host.lower().endswith(".ghe.com"):  # GitHub Enterprise Cloud with data residency
        host = host[4:]
    return f"{parts.scheme}://{host}"


def has_github_settings(source: Mapping[str, str]) -> bool:
    """Is any GitHub setting present? (None at all: the dashboard runs without the App.)"""
    return any((source.get(k) or "").strip() for k in (*REQUIRED, "GITHUB_PRIVATE_KEY_PATH"))


def _number(source: Mapping[str, str], name: str, default: float) -> float:
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


def load_app_settings(source: Mapping[str, str]) -> AppSettings:
    """:class:`AppSettings` from ``source``.

    Raises:
        MissingSetting: ``GITHUB_APP_ID``, the private key or ``GITHUB_WEBHOOK_SECRET`` is missing.
        UserError: a value is malformed or the key file cannot be read.
    """
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
    api_url = (source.get("GITHUB_API_URL") or DEFAULT_API_URL).strip().rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        raise UserError(f"GITHUB_API_URL must be an http(s) URL, got {api_url!r}")
    queue_url = (source.get("HUEY_URL") or source.get("REDIS_URL") or "").strip() or None
    if queue_url and not queue_url.startswith(("redis://", "rediss://", "unix://", "sqlite:///", "memory://")):
        raise UserError(f"HUEY_URL must be redis://..., sqlite:///PATH or memory://, got {queue_url!r}")
    public = (source.get("PERFGATE_PUBLIC_URL") or "").strip().rstrip("/") or None
    workflow = (source.get("PERFGATE_WORKFLOW") or DEFAULT_WORKFLOW).strip()
    if "/" in workflow or not workflow.endswith((".yml", ".yaml")):
        raise UserError(f"PERFGATE_WORKFLOW must be a workflow file name like perfgate.yml, got {workflow!r}")
    return AppSettings(app_id=app_id, private_key=key, webhook_secret=secret, api_url=api_url, queue_url=queue_url,
                       public_url=public, github_url=server_url(source), workflow=workflow,
                       run_timeout=_number(source, "PERFGATE_RUN_TIMEOUT", DEFAULT_RUN_TIMEOUT),
                       artifact_limit=int(_number(source, "PERFGATE_ARTIFACT_LIMIT", DEFAULT_ARTIFACT_LIMIT)))
