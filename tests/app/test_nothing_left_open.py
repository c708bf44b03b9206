"""Nothing left behind on GitHub (issue 33 item 5): a create GitHub carried out *later* than the
retry's look-up — the retry found nothing and created its own, so there are two — and a check run
left open although its run ended. The reconciling sweep (``bot.app.job.sweeps.reconcile_ended``)
completes such check runs as their run ended and deletes duplicate sticky comments; the rules are
``bot.app.core.conclude.left_open`` and ``duplicate_stickies`` (unit tests at the end)."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.app.core import conclude
from bot.app.job import executor, sweeps
from bot.app.core.actions import DeleteComment, UpdateCheckRun
from bot.app.core.facts import RunInfo
from bot.app.github.github_errors import CheckRunState
from bot.db import utc_now
from runner.report import MARKER
from testkit import app_fakes
from testkit import payloads as P
from testkit.fake_github.app import HANDLERS, error
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, deliveries, sticky, upload

HEAD, BASE = "1" * 40, "2" * 40
#: operation id → how many of its next calls GitHub answers 502 and carries out later (:data:`HELD`)
LATE: dict[str, int] = {}
#: operation id → the status it answers instead of doing anything
DOWN: dict[str, int] = {}
#: the calls held back, carried out by :func:`_carry_out_late`
HELD: list = []


@pytest.fixture
def fake_github(github_openapi, scene):  # noqa: F811 - a GitHub that carries out some writes late
    base = app_fakes.handlers(scene)

    def late(operation_id: str):
        def handler(ctx):
            if operation_id in DOWN:
                return error(DOWN[operation_id], "Server Error")
            do = base.get(operation_id) or HANDLERS[operation_id]
            if LATE.get(operation_id):
                LATE[operation_id] -= 1
                HELD.append((do, ctx))
                return error(502, "Server Error")  # the client gives up; GitHub does it later
            return do(ctx)
        return handler

    ops = ("checks/create", "checks/update", "issues/create-comment")
    handlers = {**base, **{op: late(op) for op in ops}}
    with app_fakes.labelled_pr_github(github_openapi, handlers, HEAD, BASE) as gh:
        yield gh
    LATE.clear()
    DOWN.clear()
    HELD.clear()


def _carry_out_late():
    while HELD:
        do, ctx = HELD.pop(0)
        do(ctx)


def _label():
    return P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))


def _concluded(app, client, gh, scene):
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_add", "unchanged", 1.0)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, dispatch)
    return dispatch


def _later(minutes: float = 20):
    return utc_now() + dt.timedelta(minutes=minutes)


def test_a_check_run_created_late_after_the_retry_created_its_own_is_completed_as_its_run(
        app, client, fake_github, scene):
    rt = app.extensions["perfgate"]["runtime"]
    LATE["checks/create"] = 1
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "failed" and fake_github.state.check_runs == {}
    executor.handle_delivery(rt, "d-1")  # Huey's retry: looks, finds nothing, creates its own
    _carry_out_late()  # ... and then GitHub carries out the first POST
    first, second = sorted(fake_github.state.check_runs.values(), key=lambda c: c["id"])
    assert first["external_id"] == second["external_id"]
    _concluded(app, client, fake_github, scene)
    concluded = [c for c in (first, second) if c["status"] == "completed"]
    (left,) = [c for c in (first, second) if c["status"] != "completed"]
    assert len(concluded) == 1 and concluded[0]["conclusion"] == "success"

    assert sweeps.reconcile_ended(rt, utc_now()) == []  # too early: a late POST may still land
    assert sweeps.reconcile_ended(rt, _later()) == [f"{P.REPO}@{HEAD}"]
    assert left["status"] == "completed" and left["conclusion"] == "success"
    updates = len(fake_github.calls("checks/update"))
    sweeps.reconcile_ended(rt, _later(22))  # nothing left to set right: no write
    assert len(fake_github.calls("checks/update")) == updates


def test_an_operator_sweep_may_reconcile_runs_that_ended_a_moment_ago(app, client, fake_github, scene):
    """``perfgate sweep --reconcile-after 0`` (``after=0``): what just ended is set right now, not
    15 minutes later; the default window leaves it alone."""
    rt = app.extensions["perfgate"]["runtime"]
    LATE["checks/create"] = 1
    deliver(client, _label(), delivery="d-1")
    executor.handle_delivery(rt, "d-1")
    _carry_out_late()
    _concluded(app, client, fake_github, scene)
    assert sweeps.reconcile_ended(rt) == []
    assert len([c for c in fake_github.state.check_runs.values() if c["status"] != "completed"]) == 1
    assert sweeps.reconcile_ended(rt, after=dt.timedelta(0)) == [f"{P.REPO}@{HEAD}"]
    assert {c["status"] for c in fake_github.state.check_runs.values()} == {"completed"}


def test_a_sticky_comment_created_late_is_deleted_and_the_edited_one_kept(app, client, fake_github, scene):
    rt = app.extensions["perfgate"]["runtime"]
    LATE["issues/create-comment"] = 1
    deliver(client, _label(), delivery="d-1")
    executor.handle_delivery(rt, "d-1")  # the retry writes the comment again
    _carry_out_late()
    assert len([c for c in fake_github.state.issue_comments(P.REPO, 7) if c.body.startswith(MARKER)]) == 2
    _concluded(app, client, fake_github, scene)
    sweeps.reconcile_ended(rt, _later())
    kept = sticky(fake_github)  # exactly one left
    assert "bench_add" in kept.body  # the one the App edits, with the results


def test_a_check_run_left_open_when_its_run_timed_out_while_github_failed_is_completed(app, client, fake_github):
    rt = app.extensions["perfgate"]["runtime"]
    deliver(client, _label())
    (dispatch,) = fake_github.state.dispatches
    DOWN["checks/update"] = 503
    late = utc_now() + dt.timedelta(seconds=rt.settings.run_timeout + 60)
    assert sweeps.expire_runs(rt, late) == [dispatch["inputs"]["run-id"]]  # recorded timed out all the same
    (check,) = fake_github.state.check_runs.values()
    assert check["status"] == "queued"
    del DOWN["checks/update"]
    sweeps.reconcile_ended(rt, _later())
    assert (check["status"], check["conclusion"]) == ("completed", "timed_out")


# -- the rules (pure) --------------------------------------------------------------------------------
def _run(key, status="completed", conclusion="success", group=None, headline="all unchanged"):
    return RunInfo(key=key, status=status, head_sha=HEAD, repository=P.REPO, conclusion=conclusion, group=group,
                   headline=headline, pr_number=7)


def test_left_open_completes_only_open_check_runs_of_runs_that_all_ended():
    runs = [_run("a"), _run("g", conclusion="success", group="g"), _run("g2", "in_progress", None, group="g"),
            _run("t", "timed_out", "timed_out", headline="timed out")]
    checks = [CheckRunState(1, "a", "queued"), CheckRunState(2, "a", "completed"), CheckRunState(3, "g", "queued"),
              CheckRunState(4, "t", "in_progress"), CheckRunState(5, "someone else's", "queued")]
    assert conclude.left_open(runs, checks) == [
        UpdateCheckRun(P.REPO, 1, {"status": "completed", "conclusion": "success", "title": "all unchanged",
                                   "summary": "This check run was left open; its run had ended: all unchanged"}),
        UpdateCheckRun(P.REPO, 4, {"status": "completed", "conclusion": "timed_out", "title": "timed out",
                                   "summary": "This check run was left open; its run had ended: timed out"})]


def test_a_group_left_open_ends_as_its_worst_run():
    runs = [_run("g", conclusion="success", group="g"), _run("g2", conclusion="failure", group="g")]
    (action,) = conclude.left_open(runs, [CheckRunState(3, "g", "in_progress")])
    assert action.fields["conclusion"] == "failure"


@pytest.mark.parametrize("stored, ids, deleted", [
    (11, [10, 11], [10]), (None, [10, 11, 12], [11, 12]), (99, [10, 11], [11]), (10, [10], []), (None, [], []),
])
def test_duplicate_stickies_keeps_the_stored_one_else_the_oldest(stored, ids, deleted):
    assert conclude.duplicate_stickies(P.REPO, 7, stored, ids) == [DeleteComment(P.REPO, 7, i) for i in deleted]
