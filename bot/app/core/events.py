"""GitHub webhooks without I/O (after gidgethub's ``sansio``): signature, parsing, routing.

Everything here works on plain bytes and mappings, so each rule of GitHub's protocol is a
pure function tested with literal bodies:

- :func:`signature` / :func:`verify_signature`: ``X-Hub-Signature-256`` is
  ``sha256=<hex HMAC-SHA256(secret, raw body)>`` (GitHub docs, "Validating webhook
  deliveries"; GitHub's test vector is in the tests). The comparison is constant-time.
- :func:`parse_event`: headers + raw body → :class:`Event`, verifying the signature before
  the body is parsed at all.
- :class:`Router`: ``(event, action)`` → handler, like gidgethub's ``routing.Router``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

#: The signature header GitHub sends with every delivery (SHA-256; the SHA-1 one is legacy).
SIGNATURE_HEADER = "X-Hub-Signature-256"


class WebhookError(Exception):
    """A delivery the App cannot accept; ``status`` is the HTTP status to answer."""

    status = 400


class InvalidSignature(WebhookError):
    """Missing or wrong ``X-Hub-Signature-256`` (answer 401, parse nothing)."""

    status = 401


class BadPayload(WebhookError):
    """Headers or body are not a webhook delivery (answer 400)."""

    status = 400


def signature(secret: str | bytes, body: bytes) -> str:
    """``hex(HMAC-SHA256(secret, body))``, the part of the header after ``sha256=``."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def verify_signature(body: bytes, header: str | None, secret: str | bytes) -> None:
    """Check ``header`` (the ``X-Hub-Signature-256`` value) against ``body``.

    Raises:
        InvalidSignature: the header is missing, not ``sha256=<hex>``, or does not match.
    """
    if not secret:
        raise InvalidSignature("no webhook secret is configured")
    if not header:
        raise InvalidSignature(f"missing {SIGNATURE_HEADER}")
    algorithm, _, digest = header.partition("=")
    if algorithm != "sha256" or not digest:
        raise InvalidSignature(f"{SIGNATURE_HEADER} is not of the form sha256=<hex>")
    expected = signature(secret, body)
    if not hmac.compare_digest(expected.encode("ascii"), digest.strip().lower().encode("ascii", "replace")):
        raise InvalidSignature(f"{SIGNATURE_HEADER} does not match the body")


def _read(data: dict, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in the payload ``data`` (``("label", "name")``: ``label.name``); None
    when an object on the way is absent or not an object."""
    value: Any = data
    for name in path:
        value = value.get(name) if isinstance(value, dict) else None
    return value


def _part(*path: str, doc: str, whole: bool = False) -> property:
    """A property of :class:`Event`: the payload's value at ``path``; with ``whole``, an object
    (``{}`` when it is absent or not an object)."""
    def read(event: "Event") -> Any:
        value = _read(event.data, path)
        return (value if isinstance(value, dict) else {}) if whole else value
    return property(read, doc=doc)


@dataclass(frozen=True)
class Event:
    """One verified delivery.

    ``name``: ``X-GitHub-Event`` (``pull_request``); ``action``: the payload's ``action`` or
    None (``push``, ``ping``); ``delivery_id``: ``X-GitHub-Delivery`` (a GUID; a manual
    redelivery repeats it); ``data``: the parsed payload, which the handlers read through the
    properties below (its parts by GitHub's names: ``issue``, ``comment``, ``pull_request``, ...).
    """

    name: str
    delivery_id: str
    data: dict = field(repr=False)
    action: str | None = None

    @property
    def installation_id(self) -> int | None:
        """``installation.id`` when it is a GitHub id (a positive 64-bit integer), else None."""
        value = self.installation.get("id")
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2 ** 63 else None

    @property
    def repository(self) -> str | None:
        """``repository.full_name`` when it is a string of at most 200 characters, else None."""
        name = _read(self.data, ("repository", "full_name"))
        return name if isinstance(name, str) and len(name) <= 200 else None

    # -- the payload's parts, as the handlers read them (like Probot's ``context``): an object the
    # payload lacks (or that is not one) reads as ``{}``, a value it lacks as None
    sender = _part("sender", "login", doc="``sender.login``.")
    issue = _part("issue", whole=True, doc="``issue`` (a pull request's has ``pull_request``).")
    comment = _part("comment", whole=True, doc="``comment`` (of an issue's, a PR's or a commit's).")
    pull_request = _part("pull_request", whole=True, doc="``pull_request``.")
    label = _part("label", "name", doc="``label.name``: the label added or removed.")
    changes = _part("changes", whole=True, doc="``changes`` of an edit (``{body: {from: ...}}``).")
    default_branch = _part("repository", "default_branch", doc="``repository.default_branch``.")
    check_run = _part("check_run", whole=True, doc="``check_run``.")
    requested_action = _part("requested_action", "identifier", doc="The check run button pressed.")
    check_suite = _part("check_suite", whole=True, doc="``check_suite``.")
    workflow_run = _part("workflow_run", whole=True, doc="``workflow_run``.")
    installation = _part("installation", whole=True, doc="``installation``.")
    ref = _part("ref", doc="A push's ``ref`` (``refs/heads/<branch>``).")
    before = _part("before", doc="A push's previous head (40 zeros: none).")
    after = _part("after", doc="A push's new head (40 zeros: none, the branch was deleted).")
    deleted = _part("deleted", doc="A push deleted its branch (truthy).")

    @property
    def is_bot(self) -> bool:
        """Was this written or sent by a bot (the comment's author or the sender is of type
        ``Bot``, the App itself included)? Bots are never answered."""
        types = _read(self.data, ("comment", "user", "type")), _read(self.data, ("sender", "type"))
        return "Bot" in types

    @property
    def commenter(self) -> str | None:
        """Who wrote the comment: ``comment.user.login``, else the sender."""
        return _read(self.data, ("comment", "user", "login")) or self.sender


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive header lookup on any mapping (HTTP header names are case-insensitive)."""
    if name in headers:
        return headers[name]
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def parse_event(headers: Mapping[str, str], body: bytes, secret: str | bytes) -> Event:
    """Verify and parse one delivery.

    Args:
        headers: the request headers (any case).
        body: the raw request body, exactly as received (the signature covers these bytes).
        secret: the App's webhook secret.
    Returns:
        :class:`Event`.
    Raises:
        InvalidSignature: checked first, before the body is looked at.
        BadPayload: no ``X-GitHub-Event``/``X-GitHub-Delivery`` (or longer than 64/100
            characters), a body that is not a JSON object (nested too deep to parse included),
            an ``action`` longer than 64 characters, or a content type other than JSON.
    """
    verify_signature(body, _header(headers, SIGNATURE_HEADER), secret)
    name = (_header(headers, "X-GitHub-Event") or "").strip()
    delivery = (_header(headers, "X-GitHub-Delivery") or "").strip()
    if not name or len(name) > 64:
        raise BadPayload("missing or oversized X-GitHub-Event")
    if not delivery or len(delivery) > 100:
        raise BadPayload("missing or oversized X-GitHub-Delivery")
    content_type = (_header(headers, "Content-Type") or "application/json").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise BadPayload(f"content type {content_type!r}: configure the webhook to send application/json")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadPayload(f"body is not JSON: {exc}") from None
    except RecursionError:  # nested deeper than the parser's recursion limit
        raise BadPayload("body is not JSON: nested too deep") from None
    if not isinstance(data, dict):
        raise BadPayload("body is not a JSON object")
    action = data.get("action")
    if isinstance(action, str) and len(action) > 64:
        raise BadPayload("oversized action")
    return Event(name=name, delivery_id=delivery, data=data, action=action if isinstance(action, str) else None)


Handler = Callable[..., Any]


class Router:
    """Handlers by event name and, optionally, action.

    >>> router = Router()
    >>> @router.register("pull_request", action="labeled")
    ... def on_labeled(event, *args): ...

    :meth:`lookup` prefers an ``(event, action)`` handler over an event-wide one.
    """

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str | None], Handler] = {}

    def register(self, event: str, action: str | None = None) -> Callable[[Handler], Handler]:
        def add(func: Handler) -> Handler:
            key = (event, action)
            if key in self._routes:
                raise ValueError(f"a handler for {event}/{action or '*'} is registered already")
            self._routes[key] = func
            return func
        return add

    def lookup(self, event: str, action: str | None = None) -> Handler | None:
        """The handler for ``event``/``action``, else for ``event``, else None."""
        return self._routes.get((event, action)) or self._routes.get((event, None))

    def handles(self, event: str, action: str | None = None) -> bool:
        return self.lookup(event, action) is not None

    def routes(self) -> list[tuple[str, str | None]]:
        """Every registered ``(event, action)``; action None: all actions of the event."""
        return sorted(self._routes, key=lambda key: (key[0], key[1] or ""))

    def dispatch(self, event: Event, *args: Any, **kwargs: Any) -> Any:
        """Call the handler of ``event`` with ``(event, *args, **kwargs)``; None if there is none."""
        handler = self.lookup(event.name, event.action)
        return None if handler is None else handler(event, *args, **kwargs)
