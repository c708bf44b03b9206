"""Properties of the App's intake of untrusted text: the slash-command parser and its replies,
the webhook parser, and ``POST /webhook`` as a whole (whatever arrives: one of the documented
answers, never a 500, never an exception)."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from bot.app.core import messages
from bot.app.core.commands import MAX_ROUNDS, NAMES, SHA_LENGTHS, CommandError, parse
from bot.app.core.events import WebhookError, parse_event, signature
from tests.security.markdown_check import inspect
from tests.security.strategies import json_values, untrusted_text

SECRET = "fuzz-webhook-secret-0123456789abcdefXYZ"

comment_bodies = st.one_of(
    untrusted_text,
    untrusted_text.map(lambda t: "/perf " + t),
    st.tuples(st.sampled_from(NAMES + ("RUN", "runn", "")), st.lists(untrusted_text, max_size=4))
      .map(lambda c: " ".join(["/perf", c[0], *c[1]])),
    st.tuples(st.sampled_from(["--rounds", "--threshold", "rounds=", "threshold=", "--x", "--sha", "sha="]),
              untrusted_text).map(lambda c: f"/perf run {c[0]} {c[1]}"),
    st.tuples(st.sampled_from(["run", "profile x"]), st.text("0123456789abcdefABCDEF", max_size=70))
      .map(lambda c: f"/perf {c[0]} --sha {c[1]}"),
)


@given(comment_bodies)
def test_any_comment_parses_or_gets_an_inert_reply(body):
    try:
        command = parse(body)
    except CommandError as exc:
        event("refused")
        reply = messages.command_error(str(exc))
        assert inspect(reply).problems == []
        return
    if command is None:
        event("not a command")
        return
    event(f"/perf {command.name}")
    assert command.name in NAMES
    assert command.rounds is None or 2 <= command.rounds <= MAX_ROUNDS
    assert command.threshold is None or 0 < command.threshold < 1
    # a SHA is taken only whole (review N2): never a prefix that names several commits
    assert command.sha is None or (len(command.sha) in SHA_LENGTHS and set(command.sha) <= set("0123456789abcdef"))
    for text in (command.filter, command.reason, command.benchmark):
        assert text is None or "\n" not in text


@given(untrusted_text)
def test_a_quoted_filter_comes_back_exactly(text):
    line = text.splitlines()[0] if text.splitlines() else ""
    assume(line and not line.startswith("--") and line.split("=", 1)[0] not in ("rounds", "threshold"))
    command = parse(f"/perf run {shlex.quote(line)}")
    assert command.filter == line


def _headers(body: bytes, event_name: str = "issue_comment", delivery: str = "d-1", sign: bool = True) -> dict:
    headers = {"X-GitHub-Event": event_name, "X-GitHub-Delivery": delivery, "Content-Type": "application/json"}
    if sign:
        headers["X-Hub-Signature-256"] = "sha256=" + signature(SECRET, body)
    return headers


@given(st.binary(max_size=512), st.dictionaries(st.sampled_from(
    ["X-GitHub-Event", "X-GitHub-Delivery", "Content-Type", "X-Hub-Signature-256", "x-github-event"]),
    st.text(max_size=40), max_size=5), st.booleans())
def test_webhook_parser_raises_only_webhook_errors(body, headers, sign):
    if sign:
        headers["X-Hub-Signature-256"] = "sha256=" + signature(SECRET, body)
    try:
        parse_event(headers, body, SECRET)
    except WebhookError as exc:
        assert exc.status in (400, 401)


@pytest.fixture(scope="module")
def intake(tmp_path_factory):
    """The App's Flask client with a queue that only stores jobs (nothing runs, no GitHub)."""
    from bot import create_app

    home = tmp_path_factory.mktemp("intake")
    app = create_app({"DATABASE_URL": f"sqlite:///{home / 'perfgate.db'}", "PERFGATE_HOME": str(home), "TESTING": "1",
                      "GITHUB_APP_ID": "1", "GITHUB_PRIVATE_KEY": _key(), "GITHUB_WEBHOOK_SECRET": SECRET,
                      "HUEY_URL": f"sqlite:///{home / 'huey.db'}"})
    yield app.test_client()
    app.extensions["perfgate"]["db"].dispose()


def _key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


#: (event, action) pairs the App acts on, and a few it does not.
ROUTES = [("pull_request", "labeled"), ("pull_request", "synchronize"), ("pull_request", "closed"),
          ("pull_request", "unlabeled"), ("issue_comment", "created"), ("issue_comment", "edited"),
          ("workflow_run", "completed"), ("workflow_run", "in_progress"), ("check_run", "rerequested"),
          ("check_run", "requested_action"), ("installation", "created"), ("push", None), ("ping", None),
          ("star", "created"), ("", None)]
#: 503 is for a database that is down; with it up, a payload that cannot be recorded is a bug.
ANSWERS = {200, 202, 204, 400, 401, 413}


@given(st.data())
def test_webhook_intake_answers_anything_without_a_500(intake, data):
    kind = data.draw(st.sampled_from(["bytes", "json", "payload"]))
    name, action = data.draw(st.one_of(st.sampled_from(ROUTES), st.tuples(
        st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=80), st.none())))
    if kind == "bytes":
        body = data.draw(st.binary(max_size=512))
    elif kind == "json":
        body = json.dumps(data.draw(json_values)).encode()
    else:  # the shape of a real payload with untrusted values anywhere
        payload = {"action": data.draw(st.one_of(st.just(action), untrusted_text)),
                   "installation": {"id": data.draw(st.one_of(st.integers(), st.integers(min_value=2 ** 62), json_values))},
                   "repository": data.draw(st.one_of(st.just({"full_name": "octo/demo"}), json_values,
                                                     untrusted_text.map(lambda t: {"full_name": t * 40}))),
                   "sender": {"login": data.draw(untrusted_text), "type": "User"},
                   "comment": {"id": data.draw(st.one_of(st.integers(min_value=1, max_value=2 ** 40), json_values)),
                               "body": data.draw(untrusted_text)},
                   "issue": {"number": data.draw(st.one_of(st.integers(), json_values)), "pull_request": {}},
                   data.draw(untrusted_text): data.draw(json_values)}
        body = json.dumps(payload).encode()
    delivery = data.draw(st.one_of(st.uuids().map(str), st.text(st.characters(min_codepoint=32, max_codepoint=126),
                                                                 max_size=120)))
    headers = _headers(body, name, delivery, sign=data.draw(st.sampled_from([True, True, True, False])))
    response = intake.post("/webhook", data=body, headers=headers)
    event(f"{kind}: HTTP {response.status_code}")
    assert response.status_code in ANSWERS
    assert response.headers["Content-Security-Policy"]
