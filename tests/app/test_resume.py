"""A retried job resumes where it stopped and does nothing twice; jobs of one PR run one at a
time; the time-out sweep never overwrites a concluded run.

The fake GitHub here can *lose an answer*: it carries out the call (the check run is created,
the workflow dispatched, the comment posted) and then answers 502, as when GitHub times out
after doing the work or the worker dies before recording GitHub's answer.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from bot.app.core import actions as A
from bot.app.job import executor, lease, shell, sweeps
from bot.app.store import store as app_store
from bot.app.core.facts import RunInfo
from bot.app.store.tables import Run
from bot.db import utc_now
from testkit import app_fakes
from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, deliveries, sticky, upload

HEAD, BASE = "1" * 40, "2" * 40
#: operation id → how many of its next answers to lose (the call is carried out, then 502)
LOSE: dict[str, int] = {}
#: operation id → the status it answers instead of doing anything (GitHub down for it)
DOWN: dict[str, int] = {}


@pytest.fixture
def fake_github(github_openapi, scene):  # noqa: F811 - a GitHub that can lose answers
    lossy = ("checks/create", "actions/create-workflow-dispatch", "issues/create-comment", "checks/update",
             "actions/list-workflow-run-artifacts", "actions/download-artifact")
    handlers = app_fakes.losing_handlers(scene, lossy, LOSE, DOWN)
    with app_fakes.labelled_pr_github(github_openapi, handlers, HEAD, BASE) as gh:
        yield gh
    LOSE.clear()
    DOWN.clear()


def _label():
    return P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))


def _runtime(app):
    return app.extensions["perfgate"]["runtime"]


def _dispatched_with_results(client, gh, scene) -> dict:
    """A labeled PR whose run was dispatched and whose results artifact is uploaded; its dispatch."""
    deliver(client, _label())
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_add", "unchanged", 1.0)], base_sha=BASE, head_sha=HEAD))
    return dispatch


def _retry(app, delivery_id: str):
    """What Huey's retry of a failed job does."""
    return executor.handle_delivery(_runtime(app), delivery_id)


def test_a_check_run_created_before_the_job_stopped_is_found_not_created_again(app, client, fake_github):
    LOSE["checks/create"] = 1
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "failed" and len(fake_github.state.check_runs) == 1
    assert fake_github.state.dispatches == []
    _retry(app, "d-1")
    assert deliveries(app)["d-1"] == "done"
    (check,) = fake_github.state.check_runs.values()
    assert len(fake_github.state.dispatches) == 1
    with _runtime(app).db.session() as session:
        assert app_store.get_run(session, check["external_id"]).check_run_id == check["id"]
    assert "Queued" in sticky(fake_github).body or "queued" in sticky(fake_github).body


def test_a_dispatch_that_went_through_is_found_by_the_runs_name_not_sent_again(app, client, fake_github):
    LOSE["actions/create-workflow-dispatch"] = 1
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "failed"  # a 502 may have dispatched: never concluded as failed
    assert len(fake_github.state.dispatches) == 1
    (check,) = fake_github.state.check_runs.values()
    assert check["status"] == "queued"
    _retry(app, "d-1")
    assert deliveries(app)["d-1"] == "done" and len(fake_github.state.dispatches) == 1
    (dispatch,) = fake_github.state.dispatches
    with _runtime(app).db.session() as session:
        run = app_store.get_run(session, dispatch["inputs"]["run-id"])
        assert run.workflow_run_id == dispatch["run_id"] and run.dispatched_at is not None


def test_a_dispatch_that_did_not_go_through_is_sent_on_the_retry(app, client, fake_github, scene):
    scene.failures["actions/create-workflow-dispatch"] = 503
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "failed" and fake_github.state.dispatches == []
    del scene.failures["actions/create-workflow-dispatch"]
    _retry(app, "d-1")
    assert len(fake_github.state.dispatches) == 1 and len(fake_github.state.check_runs) == 1
    assert deliveries(app)["d-1"] == "done"


def test_a_dispatch_github_never_answers_is_reported_after_the_last_retry(app, client, fake_github):
    DOWN["actions/create-workflow-dispatch"] = 503
    deliver(client, _label(), delivery="d-1")
    (check,) = fake_github.state.check_runs.values()
    for _ in range(shell.GIVE_UP_AFTER - 2):  # the first attempt ran above; the last one below
        assert check["status"] == "queued"
        with pytest.raises(Exception):
            _retry(app, "d-1")
    _retry(app, "d-1")  # the last attempt: reported, not retried
    assert check["conclusion"] == "failure" and deliveries(app)["d-1"] == "done"
    assert fake_github.state.dispatches == [] and "Could not start" in check["output"]["title"]


def test_a_missing_workflow_fails_the_run_at_once(app, client, fake_github, scene):
    scene.failures["actions/create-workflow-dispatch"] = 404  # definite: not worth a retry
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "done"
    (check,) = fake_github.state.check_runs.values()
    assert check["conclusion"] == "failure"


def test_a_reply_posted_before_the_job_stopped_is_not_posted_again(app, client, fake_github):
    comment = fake_github.state.create_comment(P.REPO, 7, "/perf help", "maintainer", "User")
    LOSE["issues/create-comment"] = 1
    deliver(client, P.issue_comment("created", "/perf help", comment_id=comment.id, login="maintainer"),
            delivery="d-help")
    assert deliveries(app)["d-help"] == "failed"
    replies = [c for c in fake_github.state.issue_comments(P.REPO, 7) if c.login == "perfgate[bot]"]
    assert len(replies) == 1
    _retry(app, "d-help")
    assert deliveries(app)["d-help"] == "done"
    replies = [c for c in fake_github.state.issue_comments(P.REPO, 7) if c.login == "perfgate[bot]"]
    assert len(replies) == 1 and "/perf run" in replies[0].body


def test_a_retry_carries_out_the_stored_plan_instead_of_deciding_again(app, client, fake_github, scene):
    """After its first steps the facts changed (the run is stored): deciding again would start
    nothing. The stored plan finishes the run."""
    scene.failures["checks/create"] = 503
    deliver(client, _label(), delivery="d-1")
    with _runtime(app).db.session() as session:
        row = app_store.get_delivery(session, "d-1")
        plan = [A.decode(a) for a in row.plan["actions"]]
        assert [type(a).__name__ for a in plan] == ["SavePull", "StartRun"] and row.step == 1
        assert row.attempts == 1
    del scene.failures["checks/create"]
    (done,) = [a for a in _retry(app, "d-1") if isinstance(a, A.StartRun)]
    assert len(fake_github.state.dispatches) == 1 and deliveries(app)["d-1"] == "done"
    with _runtime(app).db.session() as session:
        assert app_store.get_delivery(session, "d-1").step == 2


def test_a_second_job_of_a_finished_delivery_does_nothing(app, client, fake_github):
    deliver(client, _label(), delivery="d-1")
    assert deliveries(app)["d-1"] == "done"
    assert _retry(app, "d-1") == []  # the sweep and the original job both ran it
    assert len(fake_github.state.dispatches) == 1 and len(fake_github.state.check_runs) == 1


@pytest.mark.parametrize("operation,status", [
    ("actions/list-workflow-run-artifacts", 503),  # GitHub did not answer
    ("actions/download-artifact", 403),  # a secondary rate limit on the download
])
def test_results_github_could_not_hand_over_are_fetched_on_the_retry_not_reported_missing(
        app, client, fake_github, scene, operation, status):
    dispatch = _dispatched_with_results(client, fake_github, scene)
    DOWN[operation] = status
    complete(fake_github, client, dispatch)
    (check,) = fake_github.state.check_runs.values()
    assert check["status"] != "completed"  # not "no results"
    (failed,) = [d for d, status in deliveries(app).items() if status == "failed"]
    del DOWN[operation]
    _retry(app, failed)
    assert check["conclusion"] == "success" and "bench_add" in sticky(fake_github).body


def test_results_stored_before_the_job_stopped_are_concluded_without_a_second_download(app, client, fake_github,
                                                                                      scene):
    dispatch = _dispatched_with_results(client, fake_github, scene)
    DOWN["checks/update"] = 503  # stored, then concluding on GitHub fails
    complete(fake_github, client, dispatch)
    (failed,) = [d for d, status in deliveries(app).items() if status == "failed"]
    del DOWN["checks/update"]
    scene.artifacts.clear()  # a second download would find nothing
    _retry(app, failed)
    (check,) = fake_github.state.check_runs.values()
    assert check["conclusion"] == "success"
    from sqlalchemy import func, select

    from bot.history.tables import Result
    with _runtime(app).db.session() as session:
        assert session.scalar(select(func.count(Result.id))) == 1


# -- one job per PR at a time --------------------------------------------------------------------
def test_a_job_whose_pr_is_busy_does_nothing_and_goes_back_on_the_queue(app, client, fake_github):
    rt = _runtime(app)
    with lease.lease(rt, f"{P.REPO}#7"):
        assert deliver(client, _label(), delivery="d-1").status_code == 202
        assert rt.queue.huey.scheduled_count() == 1  # the job found the PR busy: scheduled again
        with pytest.raises(shell.Busy):
            _retry(app, "d-1")
    assert deliveries(app)["d-1"] == "queued" and fake_github.state.check_runs == {}
    with rt.db.session() as session:
        assert app_store.get_delivery(session, "d-1").plan is None
    _retry(app, "d-1")  # the lease was given back: the job runs
    assert deliveries(app)["d-1"] == "done" and len(fake_github.state.dispatches) == 1


def test_a_workflow_run_event_takes_the_lease_of_its_runs_pr(app, client, fake_github, scene):
    rt = _runtime(app)
    dispatch = _dispatched_with_results(client, fake_github, scene)
    with lease.lease(rt, f"{P.REPO}#7"):
        complete(fake_github, client, dispatch)
        (check,) = fake_github.state.check_runs.values()
        assert check["status"] != "completed"  # waits for the PR's other job
    with lease.lease(rt, P.REPO):  # the repository's lease (a push) does not hold it up
        (delivery,) = [d for d, status in deliveries(app).items() if status == "queued"]
        _retry(app, delivery)
    assert check["status"] == "completed"


def test_busy_jobs_go_back_on_the_queue_without_using_a_retry(app_env, tmp_path, fake_github):
    from bot import create_app
    from bot.cli import build_worker

    from .conftest import CLIENT_OPTIONS

    env = dict(app_env, HUEY_URL=f"sqlite:///{tmp_path / 'queue.db'}")
    web = create_app(env)
    deliver(web.test_client(), _label(), delivery="d-1")
    worker = build_worker(env, client_options=CLIENT_OPTIONS)
    rt = worker.runtime()
    with lease.lease(rt, f"{P.REPO}#7"):
        worker.huey.execute(worker.huey.dequeue())
    task = worker.huey.dequeue()  # the same job again, a moment later
    assert task.args == ("d-1",) and task.eta is not None
    assert task.retries == worker.process_delivery.retries  # the busy wait used none
    worker.huey.execute(task, timestamp=task.eta + dt.timedelta(seconds=1))
    assert deliveries(web)["d-1"] == "done" and len(fake_github.state.dispatches) == 1
    web.extensions["perfgate"]["db"].dispose()


def test_leases(database_url):
    from bot.db import open_database

    db = open_database(database_url)
    now, ttl = utc_now(), dt.timedelta(seconds=60)
    try:
        with db.session() as session, session.begin():
            assert app_store.acquire_lock(session, "o/r#1", "a", now, ttl)
            assert app_store.acquire_lock(session, "o/r#1", "a", now, ttl)  # renewing
            assert not app_store.acquire_lock(session, "o/r#1", "b", now + dt.timedelta(seconds=59), ttl)
            assert app_store.acquire_lock(session, "o/r#2", "b", now, ttl)  # another PR
            app_store.release_lock(session, "o/r#1", "b")  # not b's to give back
            assert not app_store.acquire_lock(session, "o/r#1", "b", now, ttl)
            assert app_store.acquire_lock(session, "o/r#1", "b", now + dt.timedelta(seconds=61), ttl)  # ran out
            assert not app_store.acquire_lock(session, "o/r#1", "a", now + dt.timedelta(seconds=62), ttl)
            app_store.release_lock(session, "o/r#1", "b")
            assert app_store.acquire_lock(session, "o/r#1", "a", now, ttl)
    finally:
        db.dispose()


# -- the time-out sweep ----------------------------------------------------------------------------
def test_the_time_out_sweep_never_overwrites_a_run_concluded_meanwhile(app, client, fake_github, scene):
    rt = _runtime(app)
    dispatch = _dispatched_with_results(client, fake_github, scene)
    late = utc_now() + dt.timedelta(seconds=rt.settings.run_timeout + 60)
    with lease.lease(rt, f"{P.REPO}#7"):  # the results are being concluded
        assert sweeps.expire_runs(rt, late) == []  # busy: left for the next sweep
    complete(fake_github, client, dispatch)
    (check,) = fake_github.state.check_runs.values()
    concluded = check["conclusion"]
    assert concluded in ("success", "neutral", "failure")
    assert sweeps.expire_runs(rt, late) == []
    assert check["conclusion"] == concluded
    with rt.db.session() as session:
        assert app_store.get_run(session, dispatch["inputs"]["run-id"]).status == "completed"


def test_the_time_out_sweep_times_out_a_silent_run(app, client, fake_github):
    rt = _runtime(app)
    deliver(client, _label())
    (dispatch,) = fake_github.state.dispatches
    late = utc_now() + dt.timedelta(seconds=rt.settings.run_timeout + 60)
    assert sweeps.expire_runs(rt, late) == [dispatch["inputs"]["run-id"]]
    (check,) = fake_github.state.check_runs.values()
    assert check["conclusion"] == "timed_out"


# -- the stored plan -----------------------------------------------------------------------------
SPEC = RunInfo(key="k1", repository="o/r", installation_id=5, kind="pr", trigger="label",
               head_sha="h" * 40, base_sha="b" * 40, pr_number=3, filter="gemm", rounds=32,
               threshold=0.02, profile=True, react_comment_id=9, workflow_ref="main")


ACTIONS = [
    A.StartRun(SPEC), A.AcceptRegression("o/r", 3, "h" * 40, "lead", "it's expected", ("a", "b[2]")),
    A.SavePull("o/r", 3, {"head_sha": "h" * 40, "head_seen_at": dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)}),
    A.UpdateCheckRun("o/r", 11, {"status": "completed", "actions": [{"label": "Re-run", "identifier": "rerun"}]}),
    A.CancelRun("k1", "closed"), A.CancelWorkflowRun("o/r", 77), A.DeleteComment("o/r", 3, 12), A.Reply("o/r", 3, "hi"), A.UpsertComment("o/r", 3, "<!-- perfgate -->\nqueued"), A.ReplyHistory("o/r", 3, None),
    A.React("o/r", 3, 9, "rocket"), A.MarkInProgress("k1", None), A.Ingest("k1", 77, "success", "https://x"),
    A.UpdateRun("k1", {"status": "completed"}), A.RecordMerge("o/r", 3, "m" * 40, "2026-11-30T12:00:00Z"),
    A.RememberCommand("o/r", 9, "/perf run", "lead"), A.RememberRefusal("o/r", 3, "x"),
    A.SaveInstallation(5, "octo", True),
    A.StartRun(RunInfo(key="k2", repository="o/r", installation_id=5, kind="bisect",
                       trigger="changepoint", head_sha="h" * 40, base_sha="g" * 40,
                       filter="bench[x=1]", runner="h100", runs_on=("self-hosted", "h100"),
                       group="k2", regression="r1")),
    A.OpenRegression(A.RegressionSpec("r1", "o/r", 5, "bench[x=1]", "g" * 40, "h" * 40, "changepoint",
                                      fingerprint="f" * 16, runner="h100", runs_on=("self-hosted", "h100"),
                                      ratio=1.05, also=("other",))),
    A.SaveRegression("r1", {"bisect_key": "k2", "culprit_pr": 12}),
    A.UpsertTrackingIssue("o/r", "r1", "Performance regression", "<!-- perfgate-regression r1 -->", "completed"),
    A.CommentOnCulprit("o/r", "r1", "k2", 12, "this PR"), A.Notify("o/r", "r1", "perfgate: regression")]


def test_every_kind_of_action_is_tried():
    assert {type(a) for a in ACTIONS} == set(A.Action.__args__)


@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_survives_the_stored_plan(action):
    stored = json.loads(json.dumps(A.encode(action)))
    again = A.decode(stored)
    assert again == action and type(again) is type(action)
    for f in dataclasses.fields(action):
        assert type(getattr(again, f.name)) is type(getattr(action, f.name))


def test_a_plan_names_only_actions():
    with pytest.raises(ValueError):
        A.decode({"$type": "Popen", "args": ["sh"]})
    with pytest.raises(ValueError):
        A.decode({"$type": "RunSpec", **{k: v for k, v in A.encode(SPEC).items() if k != "$type"}})


#: A ``StartRun`` as plans stored before the run had one description hold it (``RunSpec``).
STORED_START = (
    '{"$type": "StartRun", "spec": {"$type": "RunSpec", "key": "k1", "repository": "o/r", '
    '"installation_id": 5, "kind": "pr", "trigger": "label", '
    '"head_sha": "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh", '
    '"base_sha": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "pr_number": 3, "head_ref": null, '
    '"base_ref": null, "requested_by": null, "filter": "gemm", "rounds": 32, "threshold": null, '
    '"profile": false, "react_comment_id": null, "workflow_ref": null, "runner": "a100", '
    '"runs_on": {"$tuple": ["gpu", "a100"]}, "group": "k1", "regression": null, '
    '"all_benchmarks": false, "force_run": {"$tuple": ["x"]}}}')


def test_a_plan_stored_before_the_run_had_one_description_is_still_carried_out():
    action = A.decode(json.loads(STORED_START))
    assert action == A.StartRun(RunInfo(
        key="k1", repository="o/r", installation_id=5, kind="pr", trigger="label",
        head_sha="h" * 40, base_sha="b" * 40, pr_number=3, filter="gemm", rounds=32,
        runner="a100", runs_on=("gpu", "a100"), group="k1", force_run=("x",)))
    assert action.spec.status == "queued" and action.spec.check_run_id is None  # not stored yet
    assert A.encode(action)["spec"]["$type"] == "RunInfo"


def test_runs_have_their_dispatch_marks():
    assert {"dispatch_started_at", "dispatched_at"} <= set(Run.__table__.columns.keys())


def test_the_time_out_sweep_concludes_stored_results_instead_of_timing_them_out(app, client, fake_github, scene):
    rt = _runtime(app)
    dispatch = _dispatched_with_results(client, fake_github, scene)
    DOWN["checks/update"] = 503  # the results are stored; every try to conclude them fails
    complete(fake_github, client, dispatch)
    del DOWN["checks/update"]
    late = utc_now() + dt.timedelta(seconds=rt.settings.run_timeout + 60)
    assert sweeps.expire_runs(rt, late) == [dispatch["inputs"]["run-id"]]
    (check,) = fake_github.state.check_runs.values()
    assert check["conclusion"] == "success" and "bench_add" in sticky(fake_github).body


def test_labeling_again_retries_a_run_that_could_not_start(app, client, fake_github, scene):
    scene.failures["actions/create-workflow-dispatch"] = 404  # the workflow file is missing
    deliver(client, _label())
    (check,) = fake_github.state.check_runs.values()
    assert check["conclusion"] == "failure"
    del scene.failures["actions/create-workflow-dispatch"]  # the maintainer adds it, labels again
    deliver(client, _label())
    assert len(fake_github.state.dispatches) == 1 and len(fake_github.state.check_runs) == 2
