"""Where a regression's message may go, and what it carries (pure).

The target is the ``regression_webhook`` of the target repository's configuration on its default
branch (``runner.config``), which anyone with write access to that branch can change, and the App
posts it from its own network. So the URL must not let them reach what only the App can reach
(server-side request forgery): it is ``https://`` with a host and no credentials
(``runner.config.check_webhook_url``), and every address its host resolves to must be a public
unicast address (:func:`address_allowed`) — not loopback, not private (RFC 1918, IPv6 unique
local), not link-local (169.254.0.0/16, where clouds serve instance credentials), not shared
(100.64.0.0/10), not multicast, reserved or unspecified, nor an IPv4-mapped or NAT64 form of one —
unless the App's operator listed its network in ``PERFGATE_WEBHOOK_ALLOW`` (a chat server on the
company network). ``bot.app.github.outgoing`` sends to the very address it checked (no second lookup
that DNS could answer differently), verifies TLS against the host name and follows no redirect.

The body is Slack's incoming-webhook JSON, ``{"text": ...}``; Mattermost, Rocket.Chat, Discord's
``/slack`` endpoints and Microsoft Teams' Slack-compatible connectors take the same.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, Sequence
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class NotifyRefused(ValueError):
    """The webhook URL may not be used (the message says why; it never echoes the URL's path,
    which holds the webhook's secret)."""


def target(url: str) -> tuple[str, int, str]:
    """``(host, port, path and query)`` of an ``https://`` webhook URL.

    Raises:
        NotifyRefused: not https, no host, a user or password in it, a bad port.
    """
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 443
    except ValueError:
        raise NotifyRefused("the regression_webhook is not a URL") from None
    if parts.scheme != "https" or not host or parts.username is not None or parts.password is not None:
        raise NotifyRefused("the regression_webhook must be an https:// URL with a host and no credentials")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return host, port, path


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
    ``64:ff9b::/96``, 6to4 ``2002::/16``), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    return None


def address_allowed(text: str, allow: Sequence[Network] = ()) -> bool:
    """May a webhook message go to the address ``text`` (IPv4 or IPv6, as ``getaddrinfo`` gives it)?

    True for a public unicast address (``is_global``, and for IPv6 also the IPv4 address it may
    embed), or one inside a network the operator allowed (``allow``); False for everything else,
    and for text that is no address.
    """
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if any(address.version == net.version and address in net for net in allow):
        return True
    candidates: list = [address]
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_v4(address)
        if inner is not None:
            candidates.append(inner)
    return all(a.is_global and not a.is_multicast and not a.is_reserved and not a.is_unspecified
               for a in candidates)


def refused_addresses(addresses: Iterable[str], allow: Sequence[Network] = ()) -> list[str]:
    """The addresses of a host that a message may not go to (:func:`address_allowed`)."""
    return [a for a in addresses if not address_allowed(a, allow)]


def payload(text: str) -> dict:
    """The JSON body of a message (Slack's incoming webhook: ``{"text": ...}``)."""
    return {"text": text}
