"""The webhook intake does not wait for the consumers and loses nothing: a delivery it answers
202 while a consumer holds a write transaction is stored (durable) and processed once; the
intake's one-statement insert tells a new delivery from a repeated one on both databases; a
schema's validator is compiled once even when two deliveries ask for it at once."""

from __future__ import annotations

import datetime as dt
import threading

from bot.app.core import payloads as schemas
from bot.app.store import store as app_store
from bot.app.core.events import parse_event
from bot.app.store.tables import Refusal
from bot.db import insert_missing, utc_now
from testkit import payloads as P

from .flow import deliver, deliveries

HEAD, BASE = "1" * 40, "2" * 40


def _label():
    return P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))


def test_a_delivery_acknowledged_while_a_consumer_holds_a_write_transaction_is_durable_and_done_once(
        app, client, fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    db = app.extensions["perfgate"]["db"]
    holding, release = threading.Event(), threading.Event()

    def consumer():  # another PR's job: its lease taken and held in an open write transaction
        with db.session() as session, session.begin():
            assert app_store.acquire_lock(session, "pr:octo/other#1", "consumer", utc_now(), dt.timedelta(minutes=1))
            session.flush()
            holding.set()
            release.wait(10)

    answers = []
    holder = threading.Thread(target=consumer)
    holder.start()
    assert holding.wait(10)
    sender = threading.Thread(target=lambda: answers.append(deliver(client, _label(), delivery="d-busy")))
    sender.start()
    sender.join(timeout=3 if db.engine.dialect.name == "postgresql" else 0.3)
    if db.engine.dialect.name == "postgresql":  # row locks: the intake's insert never waits for another job
        assert answers and answers[0].status_code == 202, "the intake waited for a consumer's transaction"
    else:  # one writer at a time: the intake waits for the lock (busy time-out), it does not fail
        assert not answers
    release.set()
    holder.join(10)
    sender.join(10)
    assert answers[0].status_code == 202
    with db.engine.connect() as other:  # durable: committed, seen from another connection
        assert other.exec_driver_sql("SELECT status FROM app_deliveries WHERE delivery_id = 'd-busy'").scalar() == "done"
    assert len(fake_github.state.check_runs) == 1 and len(fake_github.state.dispatches) == 1
    assert deliver(client, _label(), delivery="d-busy").status_code == 200  # GitHub's retry: a duplicate
    assert deliveries(app) == {"d-busy": "done"}
    assert len(fake_github.state.check_runs) == 1 and len(fake_github.state.dispatches) == 1


def test_record_delivery_tells_a_new_delivery_from_a_stored_one(app):
    import json

    db = app.extensions["perfgate"]["db"]
    _, payload = _label()
    body = json.dumps(payload).encode()
    event = parse_event(P.headers("pull_request", body, delivery="d-1"), body, P.SECRET)
    with db.session() as session, session.begin():
        assert app_store.record_delivery(session, event) is True
    with db.session() as session, session.begin():
        assert app_store.record_delivery(session, event) is False  # stored: nothing written
        assert app_store.retry_delivery(session, "d-1", utc_now(), dt.timedelta(minutes=15)) is False
    with db.session() as session:
        row = app_store.get_delivery(session, "d-1")
        assert (row.status, row.event, row.action, row.repository, row.installation_id, row.step, row.attempts) == (
            "queued", "pull_request", "labeled", P.REPO, P.INSTALLATION, 0, 0)
        assert row.payload == payload and row.received_at is not None and row.queued_at is not None


def test_insert_missing_is_false_when_the_row_was_there(app):
    """On PostgreSQL the row count of ``ON CONFLICT DO NOTHING`` does not tell (it was -1 either
    way): insert_missing returned True for a row that was there."""
    db = app.extensions["perfgate"]["db"]
    values = {"repository": P.REPO, "pr_number": 7, "login": "someone"}
    keys = ("repository", "pr_number", "login")
    with db.session() as session, session.begin():
        assert insert_missing(session, Refusal, values, keys) is True
    with db.session() as session, session.begin():
        assert insert_missing(session, Refusal, values, keys) is False


def test_a_validator_asked_for_by_two_deliveries_at_once_is_compiled_once(monkeypatch):
    import fastjsonschema

    compiled, started = [], threading.Barrier(2)
    real = fastjsonschema.compile

    def counting(*args, **kwargs):
        compiled.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fastjsonschema, "compile", counting)
    monkeypatch.setattr(schemas, "_VALIDATORS", {})
    found = []

    def ask():
        started.wait(5)
        found.append(schemas._validator("webhook-ping"))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(compiled) == 1 and len(found) == 2 and found[0] is found[1]
