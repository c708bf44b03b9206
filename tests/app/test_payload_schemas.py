"""Handled webhook payloads are checked against GitHub's published schemas at the intake: the
App's shipped copy (``bot/app/schemas/``) matches the published package, real deliveries and
the tests' payload builders pass, payloads not shaped like GitHub's are a 400 with nothing
stored (security review F16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.app.core import payloads
from bot.app.core.handlers import handled
from bot.app.core.handlers.routes import routes
from testkit import payloads as P
from testkit import webhook_schemas as ws
from testkit.fake_github.spec import SpecUnavailable, package_member

from .flow import deliveries

CASES = Path(__file__).parent / "cases" / "github"
SHIPPED = Path(str(payloads.SCHEMAS))


def _vendored():
    """The published description, or a skip when it is not cached and cannot be fetched."""
    try:
        return ws._schemas()
    except SpecUnavailable as exc:
        pytest.skip(f"the published webhook schemas are not vendored: {exc}")


def test_the_shipped_copy_is_the_published_one_reduced_to_the_handled_events():
    _vendored()
    shipped = json.loads(SHIPPED.read_text("utf-8"))
    assert shipped == ws.reduced(handled), (
        "bot/app/schemas/webhooks.json drifted: run "
        "`python -m testkit.webhook_schemas --write-reduced`")
    assert (SHIPPED.parent / "LICENSE").read_text() == package_member(ws.WEBHOOKS_PACKAGE, "LICENSE").read_text()


def test_every_handled_route_has_a_schema_and_every_schema_a_route():
    events = payloads.document()["events"]
    for event, action in ((r.event, r.action) for r in routes.routes()):
        keys = [payloads.event_key(event, action)] if action else \
            [k for k in events if k == event or k.startswith(event + ".")]
        assert keys and all(k in events for k in keys), (event, action)
    for key in events:
        event, _, action = key.partition(".")
        assert handled(event, action or None), key
    assert "MIT" in (SHIPPED.parent / "LICENSE").read_text() and "12.1.0" in (SHIPPED.parent / "README.md").read_text()


def _cases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(CASES.glob("*.json")):
        doc = json.loads(path.read_text())
        out.append((doc["event"], doc["payload"]))
    return out


#: The tests' payload builders, one per handled event/action (called in the test: they need the
#: vendored examples).
BUILT = {f"pull_request.{a}": (lambda a=a: P.pull_request(a, head_sha="1" * 40, base_sha="2" * 40,
                                                        labels=("performance",)))
         for a in ("labeled", "unlabeled", "opened", "synchronize", "reopened", "closed")} | {
    "fork": lambda: P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40, fork="someone/demo"),
    "issue_comment.created": lambda: P.issue_comment("created", "/perf run"),
    "issue_comment.edited": lambda: P.issue_comment("edited", "/perf accept it's expected"),
    "workflow_run.completed": lambda: P.workflow_run("completed", 99),
    "workflow_run.in_progress": lambda: P.workflow_run("in_progress", 99, conclusion=None),
    "check_run.rerequested": lambda: P.check_run("rerequested", external_id="k", head_sha="1" * 40),
    "check_run.requested_action": lambda: P.check_run("requested_action", external_id="k", head_sha="1" * 40),
    "installation.created": lambda: P.installation("created"),
    "installation.deleted": lambda: P.installation("deleted"), "ping": P.ping,
    "push": lambda: P.push(before="1" * 40, after="2" * 40)}


@pytest.mark.parametrize("name,payload", _cases())
def test_real_deliveries_pass(name, payload):
    payloads.validate(name, payload.get("action"), payload)
    _vendored()
    assert ws.errors(name, payload.get("action"), payload) == []  # jsonschema, the reference, agrees


@pytest.mark.parametrize("build", BUILT.values(), ids=BUILT.keys())
def test_the_builders_pass(build):
    name, payload = build()
    payloads.validate(name, payload.get("action"), payload)


def _broken(path: tuple, value=None, *, drop: bool = False, build=None):
    """A builder of a labeled PR (or of ``build()``) with the field at ``path`` set or dropped."""
    return lambda: _patched(build() if build else P.pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40),
                            path, value, drop)


def _patched(delivery: tuple[str, dict], path: tuple, value, drop: bool) -> tuple[str, dict]:
    name, payload = delivery
    node = payload
    for key in path[:-1]:
        node = node[key]
    if drop:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return name, payload


#: Payloads of the review's F16 kinds, and what the 400 must name.
BROKEN = [
    (_broken(("pull_request", "number"), drop=True), "missing required field pull_request/number"),
    (_broken(("installation", "id"), "4711"), "installation/id: expected integer"),
    (_broken(("number",), 7.9), "number: expected integer"),
    (_broken(("pull_request", "head"), None), "pull_request/head: expected object"),
    (_broken(("sender",), drop=True), "missing required field sender"),
    (_broken(("pull_request", "labels"), [None]), "pull_request/labels/0: expected object"),
    (_broken(("label",), "performance"), "label: expected object"),
    (_broken(("pull_request", "state"), "merged"), "pull_request/state: not one of the values"),
    (_broken(("comment",), {"id": "x", "body": ["b"]}, build=lambda: P.issue_comment("created", "/perf run")),
     "missing required field comment/"),
]


@pytest.mark.parametrize("delivery,message", BROKEN, ids=[m for _, m in BROKEN])
def test_payloads_not_shaped_like_githubs_are_named_exactly(delivery, message):
    name, payload = delivery()
    with pytest.raises(payloads.PayloadError) as caught:
        payloads.validate(name, payload.get("action"), payload)
    assert message in str(caught.value)
    _vendored()
    assert ws.errors(name, payload.get("action"), payload)  # jsonschema, the reference, agrees


def test_an_action_without_a_published_schema_is_refused_without_echo():
    with pytest.raises(payloads.PayloadError, match="installation: no published webhook schema") as caught:
        payloads.validate("installation", "<script>", {"action": "<script>"})
    assert "<script>" not in str(caught.value)


@pytest.mark.parametrize("delivery,message", BROKEN[:4], ids=[m for _, m in BROKEN[:4]])
def test_the_intake_answers_400_and_stores_nothing(app, client, delivery, message):
    name, payload = delivery()
    body = P.encode(payload)
    response = client.post("/webhook", data=body, headers=P.headers(name, body, delivery="bad-1"))
    assert response.status_code == 400 and message in response.get_json()["error"]
    assert "4711" not in response.get_json()["error"]  # a path, never the value
    assert deliveries(app) == {}


@pytest.mark.parametrize("name,payload", _cases())
def test_the_intake_accepts_each_real_delivery(app, client, name, payload):
    body = P.encode(payload)
    response = client.post("/webhook", data=body, headers=P.headers(name, body, delivery="real-1"))
    assert response.status_code == 202 and "real-1" in deliveries(app)


def test_the_order_is_signature_parse_handled_schema(client):
    broken = P.encode({"action": "labeled"})
    forged = P.headers("pull_request", broken, secret="x")
    assert client.post("/webhook", data=broken, headers=forged).status_code == 401
    junk = b"{"
    assert client.post("/webhook", data=junk, headers=P.headers("pull_request", junk)).status_code == 400
    unhandled = P.encode({"action": "created"})  # not shaped like a star event either: never looked at
    assert client.post("/webhook", data=unhandled, headers=P.headers("star", unhandled)).status_code == 204
    response = client.post("/webhook", data=broken, headers=P.headers("pull_request", broken))
    assert response.status_code == 400 and "schema" in response.get_json()["error"]


def test_warm_up_compiles_every_handled_events_validator():
    from bot.app.core import payloads

    payloads._VALIDATORS.clear()
    count = payloads.warm_up()
    assert count == len(set(payloads.document()["events"].values())) and count >= 10
    assert len(payloads._VALIDATORS) == count
