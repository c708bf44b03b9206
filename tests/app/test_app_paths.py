"""The App's other paths against the fake GitHub: supersede on push, fork safety, accept,
cancel, failures while dispatching or ingesting, time-outs, re-runs, history runs, intake
answers (401/400/204/503, never 500)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bot.app.job import executor, sweeps
from runner.report import MARKER
from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, deliveries, sticky, upload

HEAD, BASE, NEW = "1" * 40, "2" * 40, "3" * 40


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    return fake_github


def label(client, **kw):
    return deliver(client, P.pull_request("labeled", head_sha=kw.get("head", HEAD), base_sha=BASE,
                                          labels=("performance",), fork=kw.get("fork")))


def now(seconds: float = 0) -> str:
    """An ISO time ``seconds`` from now (GitHub's form, whole seconds)."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def command(client, gh, text, login="maintainer", written_at=None):
    """A comment written a little after everything delivered so far (unless ``written_at``)."""
    comment = gh.state.create_comment(P.REPO, 7, text, login, "User")
    deliver(client, P.issue_comment("created", text, comment_id=comment.id, login=login,
                                    written_at=written_at or now(2)))
    return comment


def test_a_push_supersedes_the_running_benchmark(client, gh):
    label(client)
    (first,) = gh.state.dispatches
    gh.state.pulls[(P.REPO, 7)].head_sha = NEW
    deliver(client, P.pull_request("synchronize", head_sha=NEW, base_sha=BASE, labels=("performance",)))
    assert gh.state.workflow_runs[first["run_id"]]["conclusion"] == "cancelled"
    old, new = sorted(gh.state.check_runs.values(), key=lambda r: r["id"])
    assert (old["conclusion"], new["head_sha"], new["status"]) == ("cancelled", NEW, "queued")
    assert gh.state.dispatches[1]["inputs"]["head-sha"] == NEW
    assert "queued" in sticky(gh).body and NEW[:7] in sticky(gh).body
    # the late completion of the superseded run changes nothing
    upload_before = len(gh.state.check_runs)
    complete(gh, client, first, "cancelled")
    assert len(gh.state.check_runs) == upload_before and "queued" in sticky(gh).body


def test_fork_code_runs_only_at_an_approved_sha(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    label(client, fork="eve/demo")
    # a label names no commit: on a fork it only says the maintainer wants a run (security
    # review P2)
    assert gh.state.dispatches == [] and f"`/perf run --sha {HEAD}`" in sticky(gh).body
    command(client, gh, f"/perf run --sha {HEAD}")
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [HEAD]
    gh.state.pulls[(P.REPO, 7)].head_sha = NEW
    deliver(client, P.pull_request("synchronize", head_sha=NEW, base_sha=BASE, labels=("performance",),
                                   fork="eve/demo", updated_at=now(-60)))
    assert len(gh.state.dispatches) == 1
    assert "waiting for approval" in sticky(gh).body and f"`/perf run --sha {NEW}`" in sticky(gh).body
    command(client, gh, "/perf run")  # a fork's head is approved by naming it (review N7)
    assert len(gh.state.dispatches) == 1
    command(client, gh, f"/perf run --sha {NEW}")
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [HEAD, NEW]


#: A maintainer's real accept, with an apostrophe in the reason (tests/app/cases/github/).
REAL_ACCEPT = json.loads((Path(__file__).parent / "cases" / "github" / "issue_comment_accept_apostrophe.json")
                         .read_text())["payload"]["comment"]["body"]


@pytest.mark.parametrize("text, reason", [("/perf accept trades time for accuracy", "trades time for accuracy"),
                                          (REAL_ACCEPT, "it's the price of the fp32 accumulation fix")])
def test_accept_turns_a_failed_check_green(app, client, gh, scene, text, reason):
    label(client)
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_norm", "regression", 1.2)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, dispatch)
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "failure"
    note = command(client, gh, text)
    assert check["conclusion"] == "success" and "accepted by @maintainer" in check["output"]["title"]
    assert f"Regression accepted by @maintainer: {reason}" in sticky(gh).body
    assert [r["content"] for r in gh.state.reactions if r["comment_id"] == note.id] == ["eyes", "+1"]
    assert set(deliveries(app).values()) == {"done"}


def test_an_accept_concludes_again_only_a_run_whose_results_are_stored(app, client, gh, scene):
    """The run ``/perf accept`` concludes again (``bot.app.job.effects``) is the store's
    ``latest_concluded_run``: the PR's newest run with stored results, never one still waiting."""
    from bot.app.store import store as app_store

    label(client)
    (dispatch,) = gh.state.dispatches
    db = app.extensions["perfgate"]["db"]
    with db.session() as session:
        assert app_store.latest_concluded_run(session, P.REPO, 7) is None
    doc = results_doc([bench("bench_norm", "regression", 1.2)], base_sha=BASE, head_sha=HEAD)
    upload(scene, dispatch, doc)
    complete(gh, client, dispatch)
    with db.session() as session:
        concluded = app_store.latest_concluded_run(session, P.REPO, 7)
    assert concluded.key == dispatch["inputs"]["run-id"]


def test_fail_threshold_comes_from_the_target_config(client, gh, scene):
    scene.files[(P.REPO, "perfgate.toml")] = "fail_threshold = 0.5\n"
    label(client)
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_norm", "regression", 1.2)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, dispatch)
    assert next(iter(gh.state.check_runs.values()))["conclusion"] == "success"


def test_a_broken_target_config_is_named_in_the_report_comment(client, gh, scene):
    scene.files[(P.REPO, "perfgate.toml")] = "fail_threshold = 'half'\n"
    label(client)  # the default label still triggers: the defaults stand in for the broken file
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_norm", "regression", 1.2)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, dispatch)
    assert next(iter(gh.state.check_runs.values()))["conclusion"] == "failure"  # the default threshold
    body = sticky(gh).body
    assert "the perfgate config is broken" in body and "perfgate's defaults" in body and "fail_threshold" in body


def test_unlabel_cancels_and_a_merge_is_recorded_for_history(app, client, gh):
    from sqlalchemy import select

    from bot.history.tables import PullRequest

    label(client)
    deliver(client, P.pull_request("unlabeled", head_sha=HEAD, base_sha=BASE, label="performance"))
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "cancelled" and "label was removed" in sticky(gh).body
    deliver(client, P.pull_request("closed", head_sha=HEAD, base_sha=BASE, merged=True, merge_sha=NEW))
    with app.extensions["perfgate"]["db"].session() as session:
        pr = session.scalar(select(PullRequest).where(PullRequest.number == 7))
    assert pr.merge_sha == NEW and pr.merged_at is not None
    assert pr.head_sha == HEAD  # the head that was merged: an accept binds to it (history alerts)


def test_cancel_command(client, gh):
    label(client)
    command(client, gh, "/perf cancel")
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "cancelled"
    assert gh.state.workflow_runs[gh.state.dispatches[0]["run_id"]]["conclusion"] == "cancelled"
    assert "cancelled" in sticky(gh).body.lower()


@pytest.mark.parametrize("problem,expected", [
    ("missing", "no `perfgate-results-"),
    # the field is named, its (untrusted) value is not quoted
    ("invalid", "results artifact is invalid: results.json does not match schema_version 1 at `benchmarks/0/change`"),
    ("other_sha", "not the requested"),
])
def test_ingestion_problems_fail_the_check_with_a_reason(client, gh, scene, problem, expected):
    label(client)
    (dispatch,) = gh.state.dispatches
    if problem == "invalid":
        doc = results_doc(base_sha=BASE, head_sha=HEAD)
        doc["benchmarks"][0]["change"]["verdict"] = "much slower"
        upload(scene, dispatch, doc)
    elif problem == "other_sha":
        upload(scene, dispatch, results_doc(base_sha=BASE, head_sha=NEW))
    complete(gh, client, dispatch, "failure" if problem == "missing" else "success")
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "failure"
    assert expected in check["output"]["summary"] and expected in sticky(gh).body


def test_a_missing_workflow_is_reported_not_crashed(client, gh, scene):
    scene.failures["actions/create-workflow-dispatch"] = 404
    label(client)
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "failure" and "perfgate.yml" in check["output"]["summary"]
    assert "could not start" in sticky(gh).body
    gh.violations.clear()


def test_a_job_that_failed_before_touching_github_is_retried_cleanly(app, client, gh, scene):
    scene.failures["checks/create"] = 502
    response = label(client)
    assert response.status_code == 202 and gh.state.dispatches == []
    (delivery, status), = deliveries(app).items()
    assert status == "failed"
    del scene.failures["checks/create"]
    executor.handle_delivery(app.extensions["perfgate"]["runtime"], delivery)  # Huey's retry
    assert len(gh.state.dispatches) == 1 and deliveries(app)[delivery] == "done"
    assert len(gh.state.check_runs) == 1 and "queued" in sticky(gh).body


def test_runs_that_never_report_back_time_out(app, client, gh):
    label(client)
    rt = app.extensions["perfgate"]["runtime"]
    assert sweeps.expire_runs(rt) == []
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=4)
    (key,) = sweeps.expire_runs(rt, now=later)
    (check,) = gh.state.check_runs.values()
    assert check["conclusion"] == "timed_out" and "timed out" in sticky(gh).body
    assert client.get("/api/runs/" + key).get_json()["status"] == "timed_out"


def test_check_run_rerun_and_history_run(client, gh):
    label(client)
    (check,) = gh.state.check_runs.values()
    deliver(client, P.check_run("rerequested", external_id=check["external_id"], head_sha=HEAD))
    assert len(gh.state.dispatches) == 2 and gh.state.dispatches[1]["inputs"]["head-sha"] == HEAD
    deliver(client, P.push(before=BASE, after=NEW))
    history = gh.state.dispatches[2]
    assert history["inputs"] == {"base-sha": BASE, "head-sha": NEW, "run-id": history["inputs"]["run-id"]}
    assert any(r["head_sha"] == NEW for r in gh.state.check_runs.values())


def test_an_edited_comment_reruns_only_when_its_command_changed(client, gh):
    comment = command(client, gh, "/perf run norm")
    assert len(gh.state.dispatches) == 1
    deliver(client, P.issue_comment("edited", "/perf  run norm", previous="/perf run norm", comment_id=comment.id))
    deliver(client, P.issue_comment("edited", "/perf run norm\nplease", previous="/perf run norm", comment_id=comment.id))
    assert len(gh.state.dispatches) == 1
    deliver(client, P.issue_comment("edited", "/perf run add", previous="/perf run norm", comment_id=comment.id))
    assert [d["inputs"].get("filter") for d in gh.state.dispatches] == ["norm", "add"]
    assert gh.state.workflow_runs[gh.state.dispatches[0]["run_id"]]["conclusion"] == "cancelled"


def test_a_push_run_feeds_the_history_series(app, client, gh, scene):
    from bot.history import reads as history_reads

    deliver(client, P.push(before=BASE, after=NEW))
    (dispatch,) = gh.state.dispatches
    upload(scene, dispatch, results_doc([bench("bench_norm", "unchanged", 1.0)], base_sha=BASE, head_sha=NEW))
    complete(gh, client, dispatch)
    (check,) = gh.state.check_runs.values()
    assert (check["head_sha"], check["conclusion"]) == (NEW, "success")
    with app.extensions["perfgate"]["db"].session() as session:
        (series,) = history_reads.load_series(session, P.REPO)
    assert series.benchmark == "bench_norm" and [p.sha for p in series.points] == [NEW]
    assert gh.state.comments == {}  # a push has no PR to comment on


def test_history_and_help_replies(client, gh):
    command(client, gh, "/perf history bench_norm")
    command(client, gh, "/perf help")
    bodies = [c.body for c in gh.state.issue_comments(P.REPO, 7) if c.login == "perfgate[bot]"]
    assert any("No history stored for `bench_norm`" in b for b in bodies)
    assert any("/perf accept [REASON]" in b for b in bodies)
    assert not any(b.startswith(MARKER) for b in bodies)


def test_installations_show_on_the_index_only_where_everything_is_open(app_env, client, gh):
    from bot import create_app

    deliver(client, P.installation("created", account="octo-org"))
    assert b"octo-org" not in client.get("/").data  # which accounts installed the App is not public
    open_app = create_app({**app_env, "PERFGATE_READ_ACCESS": "all"})
    assert b"octo-org" in open_app.test_client().get("/").data
    open_app.extensions["perfgate"]["db"].dispose()


def test_intake_answers(app, client, gh):
    name, payload = P.ping()
    body = P.encode(payload)
    assert client.post("/webhook", data=body, headers=P.headers(name, body, secret="wrong")).status_code == 401
    headers = P.headers(name, body)
    del headers["X-Hub-Signature-256"]
    assert client.post("/webhook", data=body, headers=headers).status_code == 401
    junk = b"{not json"
    assert client.post("/webhook", data=junk, headers=P.headers("push", junk)).status_code == 400
    assert client.post("/webhook", data=body, headers=P.headers(name, body)).status_code == 202
    # a signed payload that is not shaped like GitHub's: 400 naming the field, nothing stored
    broken = P.encode({"action": "labeled", "installation": {"id": 1}, "repository": {"full_name": P.REPO}})
    response = client.post("/webhook", data=broken, headers=P.headers("pull_request", broken, delivery="broken-1"))
    assert response.status_code == 400 and "broken-1" not in deliveries(app)
    assert "missing required field" in response.get_json()["error"]


def test_without_github_settings_the_webhook_is_503(tmp_path):
    from bot import create_app

    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "PERFGATE_HOME": str(tmp_path)}
    app = create_app(env)
    assert app.test_client().post("/webhook", data=b"{}").status_code == 503
    assert app.test_client().get("/").status_code == 200
    app.extensions["perfgate"]["db"].dispose()
