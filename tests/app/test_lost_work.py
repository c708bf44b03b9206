"""Work is not lost: a delivery whose job failed (GitHub down) is processed again on GitHub's
"Redeliver" of the same GUID, and by the periodic sweep; done work is never repeated."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.app.job import sweeps
from bot.app.store import store as app_store
from bot.db import utc_now
from testkit import app_fakes
from testkit import payloads as P
from testkit.fake_github import FakeGitHub

from .flow import deliver, deliveries

HEAD, BASE = "1" * 40, "2" * 40
OUTAGE = {"on": False}


@pytest.fixture
def fake_github(github_openapi, scene):  # noqa: F811 - a GitHub whose check-runs API can be down
    from testkit.fake_github.app import HANDLERS

    def create_check_run(ctx):
        if OUTAGE["on"]:
            return 503, {"message": "Service Unavailable", "documentation_url": "https://docs.github.com"}
        return HANDLERS["checks/create"](ctx)

    handlers = {**app_fakes.handlers(scene), "checks/create": create_check_run}
    with FakeGitHub(github_openapi, handlers=handlers) as gh:
        gh.state.add_repo("octo/demo")
        gh.state.add_token("ghs_nobody")
        gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
        gh.state.set_permission(P.REPO, "maintainer", "write")
        yield gh
        gh.violations[:] = [v for v in gh.violations if "checks/create" not in v]  # the outage's 503s
        gh.assert_no_violations()
    OUTAGE["on"] = False


def _label():
    return P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))


def test_githubs_redelivery_does_the_lost_work_once(app, client, fake_github):
    OUTAGE["on"] = True
    assert deliver(client, _label(), delivery="d-outage").status_code == 202
    assert deliveries(app)["d-outage"] == "failed" and fake_github.state.check_runs == {}
    OUTAGE["on"] = False
    answer = deliver(client, _label(), delivery="d-outage")  # "Redeliver" in the App's settings
    assert answer.status_code == 202 and deliveries(app)["d-outage"] == "done"
    assert len(fake_github.state.check_runs) == 1 and len(fake_github.state.dispatches) == 1
    assert deliver(client, _label(), delivery="d-outage").status_code == 200  # done: a duplicate
    assert len(fake_github.state.check_runs) == 1 and len(fake_github.state.dispatches) == 1


def test_the_sweep_finds_failed_and_stale_deliveries_only(app, client, fake_github):
    OUTAGE["on"] = True
    deliver(client, _label(), delivery="d-failed")
    OUTAGE["on"] = False
    deliver(client, P.ping(), delivery="d-ping")  # not acted on: never stored
    rt = app.extensions["perfgate"]["runtime"]
    now = utc_now()
    with rt.db.session() as session, session.begin():
        old = app_store.get_delivery(session, "d-failed")
        assert old.status == "failed"
    # Failed a moment ago: Huey retries it (and a write that timed out may still land on GitHub).
    assert sweeps.lost_deliveries(rt, now) == []
    later = now + dt.timedelta(minutes=16)
    assert sweeps.lost_deliveries(rt, later) == ["d-failed"]
    with rt.db.session() as session:
        assert app_store.get_delivery(session, "d-failed").status == "queued"  # marked for the retry
    # Queued a moment ago: its job may still be on the way. Queued for long: lost.
    assert sweeps.lost_deliveries(rt, later + dt.timedelta(minutes=1)) == []
    assert sweeps.lost_deliveries(rt, later + dt.timedelta(minutes=20)) == ["d-failed"]
    # Too old to retry any more (a delivery that fails for good is not retried forever).
    assert sweeps.lost_deliveries(rt, now + dt.timedelta(hours=7)) == []
    rt_queue = rt.queue
    rt_queue.enqueue_delivery("d-failed")
    assert deliveries(app)["d-failed"] == "done" and len(fake_github.state.check_runs) == 1


def test_processed_deliveries_are_forgotten_after_the_retention(app, client, fake_github):
    rt = app.extensions["perfgate"]["runtime"]
    deliver(client, _label(), delivery="d-done")
    OUTAGE["on"] = True
    deliver(client, _label(), delivery="d-failed")
    OUTAGE["on"] = False
    with rt.db.session() as session, session.begin():
        app_store.get_delivery(session, "d-failed").status = "queued"  # its job is on the way
    later = utc_now() + dt.timedelta(seconds=rt.settings.delivery_retention + 60)
    assert sweeps.forget_deliveries(rt, utc_now()) == 0
    assert sweeps.forget_deliveries(rt, later) == 1
    assert deliveries(app) == {"d-failed": "queued"}  # work not yet done is never forgotten


def test_comments_that_are_not_commands_are_not_stored(app, client, fake_github):
    answer = deliver(client, P.issue_comment("created", "Nice speed-up, thanks!"), delivery="d-chat")
    assert answer.status_code == 204 and "d-chat" not in deliveries(app)
    assert deliver(client, P.issue_comment("created", "/perf help"), delivery="d-cmd").status_code == 202
    assert "d-cmd" in deliveries(app)


def test_a_delivery_queued_again_is_not_stale_again_at_the_next_sweep(app, client, fake_github):
    """Staleness counts from the last time it was queued, not from its arrival: in a backlog, a
    sweep must not queue again the work the previous sweep queued (one job each time)."""
    rt = app.extensions["perfgate"]["runtime"]
    OUTAGE["on"] = True
    deliver(client, _label(), delivery="d-old")
    OUTAGE["on"] = False
    now = utc_now()
    with rt.db.session() as session, session.begin():
        row = app_store.get_delivery(session, "d-old")
        row.received_at = row.queued_at = row.finished_at = now - dt.timedelta(minutes=30)
    assert sweeps.lost_deliveries(rt, now) == ["d-old"]  # failed long ago: queued again, now
    assert sweeps.lost_deliveries(rt, now + dt.timedelta(minutes=10)) == []  # its job may be on the way
    assert sweeps.lost_deliveries(rt, now + dt.timedelta(minutes=16)) == ["d-old"]  # that job was lost
