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
                               repositories only) or ``all`` (``bot.app.core.access``)
``GITHUB_CLIENT_ID`` /         the GitHub App's OAuth credentials, for signing in with
``GITHUB_CLIENT_SECRET``       GitHub (``bot.web.signin``), with ``PERFGATE_SESSION_SECRET``
                               (at least 32 characters; encrypts the user tokens kept
                               with the server-side sessions) and an https
                               ``PERFGATE_PUBLIC_URL`` (or an http loopback address)
``GITHUB_APP_ID``              the App's numeric id (the worker: it calls GitHub)
``GITHUB_PRIVATE_KEY``         the App's PEM private key, or ``GITHUB_PRIVATE_KEY_PATH``
                               naming a file with it (the worker, with ``GITHUB_APP_ID``)
``GITHUB_WEBHOOK_SECRET``      the webhook secret (the web process: it checks deliveries);
                               at least 32 characters, not an example value
``GITHUB_API_URL``             REST base URL (default ``https://api.github.com``; GitHub
                               Enterprise: ``https://HOST/api/v3``)
``GITHUB_SERVER_URL``          GitHub's web address (default: from ``GITHUB_API_URL``,
                               ``https://github.com`` or ``https://HOST``); links read
                               from payloads or stored results are rendered only when
                               they point under it
``HUEY_URL`` / ``REDIS_URL``   the job queue: ``rediss://:PASSWORD@HOST:PORT/0`` (Redis
                               with AUTH and TLS, several machines; ``?ssl_ca_certs=FILE``
                               for a private CA), ``sqlite:///PATH`` or unset (a SQLite
                               file next to the database, one machine), ``memory://`` (tests)
``PERFGATE_QUEUE_KEY``         the key the queue's messages are signed with, the same in the
                               web process and the worker (at least 32 random characters;
                               default: ``$PERFGATE_HOME/queue.key``, made on first use)
``PERFGATE_WORKFLOW``          the target's workflow file (default ``perfgate.yml``)
``PERFGATE_RUN_TIMEOUT``       seconds before a run that never reported back is marked
                               timed out (default 10800 = 3 h)
``PERFGATE_ARTIFACT_LIMIT``    largest results artifact downloaded, bytes (default 256 MiB)
``PERFGATE_DELIVERY_RETENTION`` seconds a delivery whose work ended is kept (default 604800 =
                               7 days: longer than GitHub keeps deliveries for "Redeliver")
``PERFGATE_GITHUB_TIMEOUT``    whole seconds the worker waits for each answer of
                               GitHub's API (default 20)
``PERFGATE_WEBHOOK_ALLOW``     networks a repository's ``regression_webhook`` may reach
                               though they are not public (``10.2.0.0/16, fd00::/8``;
                               default none: public addresses only, ``bot.app.core.notify``)
``PERFGATE_WEBHOOK_TIMEOUT``   seconds the worker waits for a webhook (default 10)
``REQUESTS_CA_BUNDLE`` /       a CA bundle the webhook's certificate is verified with
``SSL_CERT_FILE``              (default: certifi's)
``TESTING``                    Flask's TESTING (and GitHub clients without retries)
=============================  ==========================================================

Each process gets only what it needs (security review N8): the web process the webhook secret
(it verifies and queues deliveries, never calls GitHub), the worker the App's id and private key
(it calls GitHub, never sees a delivery's signature). Without any of them the pages and the
dashboard work and ``/webhook`` answers 503; an id without a key (or a key without an id) fails
naming the missing one; ``bot.create_app`` given the id and key must also have the webhook
secret (:meth:`Settings.require_intake`), the worker the id and key (:meth:`Settings.require_app`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping
from urllib.parse import unquote, urlsplit

from runner.errors import UserError

from .db import database_url, default_home

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
DEFAULT_WORKFLOW = "perfgate.yml"
DEFAULT_RUN_TIMEOUT = 3 * 3600.0
DEFAULT_ARTIFACT_LIMIT = 256 * 1024 * 1024
DEFAULT_DELIVERY_RETENTION = 7 * 86400.0
DEFAULT_GITHUB_TIMEOUT = 20
DEFAULT_WEBHOOK_TIMEOUT = 10.0
READ_ACCESS_MODES = ("public", "all")
#: The settings of the GitHub App (any of them given: the App's settings are read and checked).
REQUIRED = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET")
#: The shortest webhook secret accepted: 32 characters, the length of GitHub's own generated
#: secrets' entropy in hex (the setup page generates 64). Anyone who knows the secret can sign
#: deliveries the App acts on (security review N8).
MIN_WEBHOOK_SECRET = 32
#: Example values of the deployment files (``.env.example``, ``deploy/kubernetes/secret.yaml``)
#: and of earlier versions of them: refused, so an example left in place cannot go live.
EXAMPLE_SECRETS = frozenset({
    "a-long-random-string", "replace-with-the-apps-webhook-secret",
    "replace-with-the-webhook-secret-of-your-github-app", "replace-with-a-long-random-string",
    "another-long-random-string", "replace-with-the-redis-password",
    "replace-with-a-random-queue-key-of-64-hex-digits",
})


def check_url_passwords(source: Mapping[str, str]) -> None:
    """Refuse a database or queue URL whose password is an example value of the deployment files
    (``.env.example``'s ``REDIS_PASSWORD`` and ``POSTGRES_PASSWORD``, the Kubernetes secret's Redis
    URL): they were accepted although the files say they are refused (security review N8).

    Raises:
        UserError: naming the variable."""
    for name in ("DATABASE_URL", "HUEY_URL", "REDIS_URL"):
        try:
            password = urlsplit((source.get(name) or "").strip()).password
        except ValueError:  # malformed: the variable's own reader says so
            continue
        if password and unquote(password).strip().lower() in EXAMPLE_SECRETS:
            raise UserError(f"{name} holds the example password of the deployment files; "
                            "set a long random one of your own (and the same in the database's "
                            "or Redis's own settings)")


class MissingSetting(UserError):
    """A required setting is not set; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    """Everything the web process and the worker are configured with (module docstring).

    ``database_url``: SQLAlchemy URL; ``home``: ``PERFGATE_HOME``; ``public_url``: no trailing
    slash, or None; ``read_access``: ``public`` or ``all``; ``api_url``/``github_url``: GitHub's
    REST base and web address (the only host the pages and comments link to from stored
    data); ``oauth_*``/``session_secret``: signing in with GitHub; ``app_id`` ...
    ``github_timeout``: the GitHub App (``app_id`` None: no App configured); ``webhook_allow``
    (``ipaddress`` networks), ``webhook_timeout`` (seconds), ``ca_bundle`` (a
    file): the regression webhook. Secrets are left out of ``repr``.
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
    queue_key: str | None = field(default=None, repr=False)
    workflow: str = DEFAULT_WORKFLOW
    run_timeout: float = DEFAULT_RUN_TIMEOUT
    artifact_limit: int = DEFAULT_ARTIFACT_LIMIT
    delivery_retention: float = DEFAULT_DELIVERY_RETENTION
    github_timeout: int = DEFAULT_GITHUB_TIMEOUT
    webhook_allow: tuple = ()
    webhook_timeout: float = DEFAULT_WEBHOOK_TIMEOUT
    ca_bundle: str | None = None

    @property
    def oauth(self) -> bool:
        """Can people sign in with GitHub?"""
        return bool(self.oauth_client_id and self.oauth_client_secret and self.session_secret)

    @property
    def has_app(self) -> bool:
        """Can this process call GitHub as the App (id and private key: the worker)?"""
        return self.app_id is not None and self.private_key is not None

    @property
    def has_intake(self) -> bool:
        """Can this process accept webhook deliveries (the webhook secret: the web process)?"""
        return self.webhook_secret is not None

    def require_app(self) -> "Settings":
        """``self`` when the App's id and private key are configured (the worker).

        Raises:
            MissingSetting: naming ``GITHUB_APP_ID`` (the App's id and key are not set).
        """
        if not self.has_app:
            raise MissingSetting("GITHUB_APP_ID is not set (the GitHub App's numeric id; with GITHUB_PRIVATE_KEY "
                                 "or GITHUB_PRIVATE_KEY_PATH)")
        return self

    def require_intake(self) -> "Settings":
        """``self`` when the webhook secret is configured (the web process).

        Raises:
            MissingSetting: naming ``GITHUB_WEBHOOK_SECRET``.
        """
        if not self.has_intake:
            raise MissingSetting("GITHUB_WEBHOOK_SECRET is not set (the App's webhook secret; the web process "
                                 "needs it to accept deliveries)")
        return self


def load_settings(source: Mapping[str, str]) -> Settings:
    """:class:`Settings` from ``source`` (``os.environ`` or a test's dict with the same keys).

    Raises:
        MissingSetting: the App's id is given without its key or the key without the id (names
            the missing one).
        UserError: a value is malformed, a secret is short or an example value (:func:`check_webhook_secret`),
            signing in is configured without an https ``PERFGATE_PUBLIC_URL`` (:func:`check_sign_in_url`),
            or the key file cannot be read (the message names the variable).
    """
    check_url_passwords(source)
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
                        "(it encrypts the user's token kept on the server)")
    if client_id:
        check_sign_in_url(public)
    api_url = (source.get("GITHUB_API_URL") or "").strip().rstrip("/") or DEFAULT_API_URL
    common = dict(database_url=database_url(source), home=default_home(source), public_url=public,
                  testing=testing, read_access=mode, api_url=api_url, github_url=server_url(source),
                  oauth_client_id=client_id, oauth_client_secret=client_secret, session_secret=session_secret)
    if not any((source.get(k) or "").strip() for k in (*REQUIRED, "GITHUB_PRIVATE_KEY_PATH")):
        return Settings(**common)
    if not api_url.startswith(("http://", "https://")):
        raise UserError(f"GITHUB_API_URL must be an http(s) URL, got {api_url!r}")
    return Settings(**common, **_app_settings(source))


def check_webhook_secret(secret: str) -> str:
    """``secret`` when it is fit to be the App's webhook secret: at least
    :data:`MIN_WEBHOOK_SECRET` characters, not one of :data:`EXAMPLE_SECRETS`, not mostly one
    character (fewer than 8 distinct ones).

    Raises:
        UserError: naming ``GITHUB_WEBHOOK_SECRET`` and how to make a good one (the value is not echoed).
    """
    how = "make one with: python3 -c 'import secrets; print(secrets.token_hex(32))' and set it on the App too"
    if secret.strip().lower() in EXAMPLE_SECRETS:
        raise UserError(f"GITHUB_WEBHOOK_SECRET is the example value of the deployment files; {how}")
    if len(secret) < MIN_WEBHOOK_SECRET:
        raise UserError(f"GITHUB_WEBHOOK_SECRET has {len(secret)} characters, fewer than {MIN_WEBHOOK_SECRET}: "
                        f"anyone who guesses it can sign deliveries the App acts on; {how}")
    if len(set(secret)) < 8:
        raise UserError(f"GITHUB_WEBHOOK_SECRET repeats a few characters (not random); {how}")
    return secret


def is_loopback_url(url: str | None) -> bool:
    """Is ``url`` an ``http://`` address of this machine only (``127.0.0.0/8``, ``[::1]``, ``localhost``)?"""
    import ipaddress

    if not url:
        return False
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_sign_in_url(public_url: str | None) -> str:
    """``public_url`` when signing in may be offered there: an ``https://`` address, or an
    ``http://`` loopback address (:func:`is_loopback_url`: trying it on one's own machine, where
    the cookie cannot cross a network). The OAuth callback and the session cookie are bound to it
    (security review N6: a cookie sent over plain http can be read on the way).

    Raises:
        UserError: naming ``PERFGATE_PUBLIC_URL``.
    """
    if public_url and (public_url.startswith("https://") or is_loopback_url(public_url)):
        return public_url
    raise UserError("signing in with GitHub (GITHUB_CLIENT_ID) needs PERFGATE_PUBLIC_URL to be the App's https:// "
                    f"address (or http://127.0.0.1:PORT on your own machine), got {public_url or 'nothing'!r}")


def _app_settings(source: Mapping[str, str]) -> dict:
    """The GitHub App's fields of :class:`Settings`, validated: the id and key (both or neither),
    the webhook secret (if given), the queue and the run settings."""
    app_id = (source.get("GITHUB_APP_ID") or "").strip()
    key = source.get("GITHUB_PRIVATE_KEY") or ""
    key_path = (source.get("GITHUB_PRIVATE_KEY_PATH") or "").strip()
    if (key.strip() or key_path) and not app_id:
        raise MissingSetting("GITHUB_APP_ID is not set (the GitHub App's numeric id)")
    if app_id and not app_id.isdigit():
        raise UserError(f"GITHUB_APP_ID must be the App's numeric id, got {app_id!r}")
    if not key.strip() and key_path:
        try:
            key = Path(key_path).expanduser().read_text("utf-8")
        except OSError as exc:
            raise UserError(f"GITHUB_PRIVATE_KEY_PATH {key_path}: {exc.strerror or exc}") from None
    if app_id and not key.strip():
        raise MissingSetting("GITHUB_PRIVATE_KEY (or GITHUB_PRIVATE_KEY_PATH) is not set (the App's PEM private key)")
    if app_id:
        key = key.replace("\\n", "\n") if "\\n" in key and "\n" not in key.strip() else key
        if "PRIVATE KEY" not in key:
            raise UserError("GITHUB_PRIVATE_KEY is not a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
    secret = source.get("GITHUB_WEBHOOK_SECRET") or ""
    if secret:
        check_webhook_secret(secret)
    queue_url = (source.get("HUEY_URL") or source.get("REDIS_URL") or "").strip() or None
    if queue_url and not queue_url.startswith(("redis://", "rediss://", "unix://", "sqlite:///", "memory://")):
        raise UserError(f"HUEY_URL must be rediss://..., redis://..., sqlite:///PATH or memory://, got {queue_url!r}")
    queue_key = (source.get("PERFGATE_QUEUE_KEY") or "").strip() or None
    if queue_key and (len(queue_key) < MIN_WEBHOOK_SECRET or len(set(queue_key)) < 8
                      or queue_key.lower() in EXAMPLE_SECRETS):
        raise UserError("PERFGATE_QUEUE_KEY is short, not random or the example value: make one "
                        "with python3 -c 'import secrets; print(secrets.token_hex(32))'")
    workflow = (source.get("PERFGATE_WORKFLOW") or DEFAULT_WORKFLOW).strip()
    if "/" in workflow or not workflow.endswith((".yml", ".yaml")):
        raise UserError(f"PERFGATE_WORKFLOW must be a workflow file name like perfgate.yml, got {workflow!r}")
    webhook_allow = _networks(source, "PERFGATE_WEBHOOK_ALLOW")
    ca_bundle = (source.get("REQUESTS_CA_BUNDLE") or source.get("SSL_CERT_FILE") or "").strip() or None
    return dict(app_id=app_id or None, private_key=key if app_id else None, webhook_secret=secret or None,
                webhook_allow=webhook_allow, ca_bundle=ca_bundle,
                webhook_timeout=_positive(source, "PERFGATE_WEBHOOK_TIMEOUT", DEFAULT_WEBHOOK_TIMEOUT),
                queue_url=queue_url, queue_key=queue_key, workflow=workflow,
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


def _networks(source: Mapping[str, str], name: str) -> tuple:
    """Networks (``10.2.0.0/16``, ``fd00::/8``, one address) separated by commas or spaces.

    Raises:
        UserError: an entry that is not a network (naming the variable)."""
    import ipaddress

    try:
        return tuple(ipaddress.ip_network(entry, strict=False)
                     for entry in (source.get(name) or "").replace(",", " ").split())
    except ValueError as exc:
        raise UserError(f"{name} must list networks like 10.2.0.0/16 or fd00::/8: {exc}") from None


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
