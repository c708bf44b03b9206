"""Sending a regression's message to the configured webhook (thin shell over ``socket`` and
``urllib3``; every decision is :mod:`bot.app.core.notify`'s).

The host is resolved once; every address it resolves to must be allowed
(:func:`bot.app.core.notify.address_allowed`), and the request goes to the first of them — the
address that was checked, not one a second lookup might give (DNS rebinding) — with TLS verified
against the host name (SNI and the certificate's name), no redirect followed and no proxy.
"""

from __future__ import annotations

import json
import socket
from typing import Sequence

from ..core.notify import Network, NotifyRefused, refused_addresses, target


class NotSent(Exception):
    """The message surely did not leave: the host did not resolve, no connection was made.
    Sending again later cannot send it twice."""


class MaybeSent(Exception):
    """The request was written and then failed (no answer in time, a broken connection, an error
    status): the receiver may have the message. Sending again could send it twice."""


def post(url: str, body: dict, *, allow: Sequence[Network] = (), timeout: float = 10.0,
         ca_certs: str | None = None) -> int:
    """POST ``body`` as JSON to the webhook ``url``; returns the HTTP status (2xx).

    Args:
        allow: networks the operator lets messages reach though they are not public.
        ca_certs: a CA bundle to verify the receiver with (default: certifi's).

    Raises:
        NotifyRefused: the URL, or an address its host resolves to, may not be used.
        NotSent: the host did not resolve or no connection could be made.
        MaybeSent: the request may have been received, but no 2xx answer came.
    """
    import urllib3

    host, port, path = target(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise NotSent(f"the webhook's host does not resolve ({type(exc).__name__})") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise NotSent("the webhook's host has no address")
    refused = refused_addresses(addresses, allow)
    if refused:
        raise NotifyRefused(f"the webhook's host resolves to an address on a private or reserved network "
                            f"({refused[0]}); perfgate sends only to public addresses (or those of "
                            "PERFGATE_WEBHOOK_ALLOW)")
    if ca_certs is None:
        import certifi

        ca_certs = certifi.where()
    pool = urllib3.HTTPSConnectionPool(addresses[0], port, server_hostname=host, assert_hostname=host,
                                       cert_reqs="CERT_REQUIRED", ca_certs=ca_certs, retries=False,
                                       timeout=urllib3.Timeout(connect=timeout, read=timeout))
    headers = {"Host": host if port == 443 else f"{host}:{port}", "Content-Type": "application/json",
               "User-Agent": "perfgate"}
    try:
        response = pool.urlopen("POST", path, body=json.dumps(body).encode("utf-8"), headers=headers,
                                redirect=False, assert_same_host=False, preload_content=True)
    except urllib3.exceptions.NewConnectionError as exc:
        raise NotSent(f"no connection to the webhook ({type(exc).__name__})") from None
    except urllib3.exceptions.ConnectTimeoutError:
        raise NotSent("no connection to the webhook in time") from None
    except urllib3.exceptions.SSLError as exc:
        raise NotSent(f"the webhook's TLS certificate was not accepted ({type(exc).__name__})") from None
    except urllib3.exceptions.HTTPError as exc:
        raise MaybeSent(f"the webhook did not answer ({type(exc).__name__})") from None
    finally:
        pool.close()
    if not 200 <= response.status < 300:
        raise MaybeSent(f"the webhook answered HTTP {response.status}")
    return response.status
