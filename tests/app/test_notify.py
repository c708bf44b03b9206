"""The regression webhook: where a message may go (no address of the App's own network unless the
operator allows it), and the sender against a real TLS receiver on loopback."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from bot.app.core import notify
from bot.app.github import outgoing
from runner.config import from_texts
from runner.errors import ConfigError
from testkit.app_fakes import WebhookReceiver

LOOPBACK = (ipaddress.ip_network("127.0.0.1/32"),)


@pytest.mark.parametrize("address, allowed", [
    ("52.1.2.3", True), ("2606:4700::1111", True),
    ("127.0.0.1", False), ("::1", False),                      # this machine
    ("10.0.0.5", False), ("172.16.3.4", False), ("192.168.1.1", False), ("fd12::1", False),  # private networks
    ("169.254.169.254", False), ("fe80::1%eth0", False),        # link-local: the cloud's metadata endpoint
    ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.251", False), ("240.0.0.1", False),
    ("::ffff:10.0.0.5", False), ("64:ff9b::a9fe:a9fe", False), ("2002:a00:1::", False),  # IPv4 inside IPv6
    ("not an address", False),
])
def test_only_public_addresses_may_be_reached(address, allowed):
    assert notify.address_allowed(address) is allowed


def test_the_operator_may_allow_a_network_of_its_own():
    inside = (ipaddress.ip_network("10.2.0.0/16"),)
    assert notify.address_allowed("10.2.9.9", inside) and not notify.address_allowed("10.3.0.1", inside)
    assert notify.refused_addresses(["10.2.0.1", "10.9.0.1", "8.8.8.8"], inside) == ["10.9.0.1"]


@pytest.mark.parametrize("url", ["http://hooks.slack.com/services/x", "ftp://x.example/", "https:///nohost",
                                 "https://user:pw@hooks.example.com/x", "https://hooks.example.com:99999/x"])
def test_a_webhook_url_that_is_not_https_to_a_host_is_refused(url):
    with pytest.raises(notify.NotifyRefused):
        notify.target(url)
    with pytest.raises(ConfigError, match="regression_webhook"):
        from_texts({"perfgate.toml": f'regression_webhook = "{url}"\n'})


def test_target_and_payload():
    assert notify.target("https://hooks.slack.com/services/T/B/x?y=1") == ("hooks.slack.com", 443, "/services/T/B/x?y=1")
    assert notify.payload("hi") == {"text": "hi"}


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    hook = WebhookReceiver(tmp_path_factory.mktemp("hook"))
    yield hook
    hook.stop()


def test_a_message_reaches_an_allowed_receiver_over_verified_tls(receiver):
    receiver.messages.clear()
    assert outgoing.post(receiver.url, {"text": "one"}, allow=LOOPBACK, ca_certs=receiver.ca_file, timeout=5) == 200
    (message,) = receiver.messages
    assert message["body"] == {"text": "one"} and message["path"] == "/services/T0/B0/secret"
    assert message["host"] == receiver.url.split("/")[2]


def test_loopback_is_refused_without_the_operators_allowance(receiver):
    receiver.messages.clear()
    with pytest.raises(notify.NotifyRefused, match="private or reserved"):
        outgoing.post(receiver.url, {"text": "x"}, ca_certs=receiver.ca_file, timeout=5)
    with pytest.raises(notify.NotifyRefused):  # a name that resolves to this machine is refused the same way
        outgoing.post(receiver.url.replace("127.0.0.1", "localhost"), {"text": "x"}, ca_certs=receiver.ca_file)
    assert receiver.messages == []


def test_an_untrusted_certificate_sends_nothing(receiver):
    receiver.messages.clear()
    with pytest.raises(outgoing.NotSent, match="certificate"):
        outgoing.post(receiver.url, {"text": "x"}, allow=LOOPBACK, timeout=5)  # certifi's CAs: not ours
    assert receiver.messages == []


def test_an_error_answer_may_have_been_received_and_a_refused_connection_was_not(receiver):
    receiver.fail = 1
    with pytest.raises(outgoing.MaybeSent, match="500"):
        outgoing.post(receiver.url, {"text": "x"}, allow=LOOPBACK, ca_certs=receiver.ca_file, timeout=5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(outgoing.NotSent):
        outgoing.post(f"https://127.0.0.1:{closed}/x", {"text": "x"}, allow=LOOPBACK, ca_certs=receiver.ca_file,
                      timeout=5)
