"""What one labelled PR costs the App: database transactions (SQLAlchemy ``begin`` events on the
App's engine) and GitHub requests (the fake's request log), from the label to the concluded check
run (label → workflow in progress → completed with results). The figures are printed (``-s``) and
bounded, so a change that adds round trips is seen. Before issue 33 (``884cb6a``): 50 transactions
(20 + 13 + 17) and 20 GitHub requests (9 + 2 + 9, four of them installation tokens); after: 39
(16 + 10 + 13) and 16 (one token per installation and hour; the artifacts listed without reading
the workflow run)."""

from __future__ import annotations

from sqlalchemy import event

from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, upload

HEAD, BASE = "1" * 40, "2" * 40


def _count(app, fake_github, scene, client):
    engine = app.extensions["perfgate"]["db"].engine
    begins = []
    event.listen(engine, "begin", lambda conn: begins.append(1))
    gh = fake_github
    gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    gh.state.set_permission(P.REPO, "maintainer", "maintain")
    before = len(gh.requests)
    steps = {}
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)))
    steps["label"] = (len(begins), len(gh.requests) - before)
    (dispatch,) = gh.state.dispatches
    deliver(client, P.workflow_run("in_progress", dispatch["run_id"]))
    steps["in_progress"] = (len(begins), len(gh.requests) - before)
    upload(scene, dispatch, results_doc([bench("bench_add", "unchanged", 1.0)], base_sha=BASE, head_sha=HEAD))
    complete(gh, client, dispatch)
    steps["completed"] = (len(begins), len(gh.requests) - before)
    (check,) = gh.state.check_runs.values()
    assert check["status"] == "completed"
    return steps, [r.operation_id for r in gh.requests[before:]]


def test_transactions_and_github_calls_of_one_labelled_pr(app, client, fake_github, scene):
    steps, operations = _count(app, fake_github, scene, client)
    print("\ncumulative (transactions, GitHub requests):", steps)
    print("GitHub operations:", operations)
    transactions, requests = steps["completed"]
    assert transactions <= 39 and requests <= 16, steps
