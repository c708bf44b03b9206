"""bot.app.core.events: signature (GitHub's published test vector), parsing, routing — no I/O."""

from __future__ import annotations

import json

import pytest

from bot.app.core.events import (BadPayload, Event, InvalidSignature, Router, parse_event,
                                 signature, verify_signature)

SECRET = "It's a Secret to Everybody"
VECTOR = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_github_published_test_vector():
    assert signature(SECRET, b"Hello, World!") == VECTOR
    verify_signature(b"Hello, World!", "sha256=" + VECTOR, SECRET)


@pytest.mark.parametrize("header", [None, "", "sha1=" + VECTOR, "sha256=", VECTOR, "sha256=" + VECTOR[:-1] + "0",
                                    "sha256=zz\u00e9"])
def test_bad_signatures_are_rejected(header):
    with pytest.raises(InvalidSignature):
        verify_signature(b"Hello, World!", header, SECRET)


def test_a_changed_body_or_secret_breaks_the_signature():
    with pytest.raises(InvalidSignature):
        verify_signature(b"Hello, World?", "sha256=" + VECTOR, SECRET)
    with pytest.raises(InvalidSignature):
        verify_signature(b"Hello, World!", "sha256=" + VECTOR, "another secret")
    with pytest.raises(InvalidSignature):
        verify_signature(b"Hello, World!", "sha256=" + VECTOR, "")


def _headers(body: bytes, **extra):
    base = {"x-github-event": "pull_request", "x-github-delivery": "d-1",
            "x-hub-signature-256": "sha256=" + signature(SECRET, body), "content-type": "application/json"}
    base.update(extra)
    return base


def test_parse_event_reads_headers_case_insensitively():
    body = json.dumps({"action": "labeled", "installation": {"id": 5}, "repository": {"full_name": "o/r"},
                       "sender": {"login": "alice"}}).encode()
    event = parse_event(_headers(body), body, SECRET)
    assert (event.name, event.action, event.delivery_id) == ("pull_request", "labeled", "d-1")
    assert (event.installation_id, event.repository, event.sender) == (5, "o/r", "alice")


def test_signature_is_checked_before_the_body_is_parsed():
    body = b"not json at all"
    with pytest.raises(InvalidSignature):
        parse_event({"X-GitHub-Event": "push", "X-GitHub-Delivery": "x", "X-Hub-Signature-256": "sha256=00"}, body, SECRET)
    with pytest.raises(BadPayload):
        parse_event(_headers(body), body, SECRET)


@pytest.mark.parametrize("body,extra", [
    (b"[1, 2]", {}),
    (b"\xff\xfe", {}),
    (b"{}", {"x-github-event": ""}),
    (b"{}", {"x-github-delivery": ""}),
    (b"payload=%7B%7D", {"content-type": "application/x-www-form-urlencoded"}),
])
def test_malformed_deliveries(body, extra):
    with pytest.raises(BadPayload):
        parse_event(_headers(body, **extra), body, SECRET)


def test_router_prefers_the_action_specific_handler():
    router = Router()
    calls = []

    @router.register("pull_request", action="labeled")
    def labeled(event, tag):
        calls.append(("labeled", tag))

    @router.register("pull_request")
    def any_pr(event, tag):
        calls.append(("any", tag))

    router.dispatch(Event("pull_request", "d", {}, "labeled"), 1)
    router.dispatch(Event("pull_request", "d", {}, "closed"), 2)
    assert router.dispatch(Event("issues", "d", {}, "opened"), 3) is None
    assert calls == [("labeled", 1), ("any", 2)]
    assert router.handles("pull_request", "edited") and not router.handles("issues")
    with pytest.raises(ValueError):
        router.register("pull_request", action="labeled")(labeled)


def test_the_payloads_parts_are_read_by_githubs_names_and_a_missing_one_is_empty():
    comment = {"id": 5, "body": "/perf run", "user": {"login": "lead", "type": "User"}}
    data = {"comment": comment, "issue": {"number": 7, "pull_request": {}},
            "sender": {"login": "lead", "type": "User"},
            "repository": {"full_name": "o/r", "default_branch": "main"}}
    event = Event("issue_comment", "d", data, "created")
    assert (event.comment, event.issue["number"], event.commenter) == (comment, 7, "lead")
    assert (event.repository, event.default_branch, event.is_bot) == ("o/r", "main", False)
    assert event.pull_request == event.check_run == event.changes == {} and event.label is None
    bot = {"login": "y", "type": "Bot"}
    by_bot = Event("issue_comment", "d", {"comment": {"user": bot}, "sender": {"login": "x"}})
    sent_by_bot = Event("issue_comment", "d", {"comment": {}, "sender": bot})
    assert by_bot.is_bot and sent_by_bot.is_bot
    assert sent_by_bot.commenter == "y"  # no author: the sender
    assert Event("push", "d", {"issue": "not an object"}).issue == {}
    pushed = {"ref": "refs/heads/main", "before": "a" * 40, "after": "b" * 40, "deleted": True}
    push = Event("push", "d", pushed)
    assert (push.ref, push.before, push.after, push.deleted) == tuple(pushed.values())
