"""End to end against the fake GitHub: label → check run + queued comment + dispatch pinned to
the SHAs → (the test plays the runner) → workflow_run completed → verdict comment and
concluded check run; then ``/perf run`` by a maintainer (a second run, the same comment) and by
a read-only user (one polite refusal, nothing dispatched)."""

from __future__ import annotations

from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, deliveries, sticky, upload

HEAD, BASE = "1" * 40, "2" * 40


def finish_run(gh, scene, dispatch, doc, client):
    """Play the GPU runner: upload the artifact the Action would, then GitHub's completion event."""
    upload(scene, dispatch, doc)
    return complete(gh, client, dispatch)


def test_label_dispatch_ingest_and_commands(app, client, fake_github, scene):
    gh = fake_github
    gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    gh.state.set_permission(P.REPO, "maintainer", "maintain")
    gh.state.set_permission(P.REPO, "visitor", "read")

    # 1. the label
    response = deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)))
    assert response.status_code == 202
    (dispatch,) = gh.state.dispatches
    key = dispatch["inputs"]["run-id"]
    assert dispatch["workflow_id"] == "perfgate.yml" and dispatch["ref"] == "main"
    assert dispatch["inputs"] == {"base-sha": BASE, "head-sha": HEAD, "pr-number": "7", "run-id": key}
    assert gh.calls("actions/create-workflow-dispatch")[0].body["return_run_details"] is True
    (check,) = gh.state.check_runs.values()
    assert (check["head_sha"], check["status"], check["external_id"]) == (HEAD, "queued", key)
    assert check["details_url"] == f"https://perfgate.example.org/runs/{key}"
    comment = sticky(gh)
    assert "queued" in comment.body and comment.login == "perfgate[bot]"
    assert f"https://github.com/{P.REPO}/actions/runs/{dispatch['run_id']}" in comment.body

    # 2. the workflow starts on a GPU runner, then reports back: a 10 % regression (beyond fail_threshold 5 %) and an unchanged one
    deliver(client, P.workflow_run("in_progress", dispatch["run_id"]))
    assert gh.state.check_runs[check["id"]]["status"] == "in_progress"
    doc = results_doc([bench("bench_norm[rows=4096]", "regression", 1.10), bench("bench_add", "unchanged", 1.0)],
                      base_sha=BASE, head_sha=HEAD)
    assert finish_run(gh, scene, dispatch, doc, client).status_code == 202
    assert gh.state.check_runs[check["id"]]["status"] == "completed"
    assert gh.state.check_runs[check["id"]]["conclusion"] == "failure"
    assert gh.state.check_runs[check["id"]]["actions"][0]["identifier"] == "rerun"
    after = sticky(gh)
    assert after.id == comment.id and "bench_norm[rows=4096]" in after.body and "regression" in after.body
    page = client.get(f"/runs/{key}")
    assert page.status_code == 200 and b"bench_norm[rows=4096]" in page.data and HEAD.encode() in page.data
    assert page.data.count(b'<div class="perfgate-run">') == 1 and f"<code>{key}</code>".encode() in page.data
    assert client.get("/api/runs/" + key).get_json()["conclusion"] == "failure"

    # 3. /perf run by a maintainer: a second run at the same SHAs, the same comment
    own = gh.state.create_comment(P.REPO, 7, "/perf run bench_norm", "maintainer", "User")
    response = deliver(client, P.issue_comment("created", "/perf run bench_norm", comment_id=own.id))
    assert response.status_code == 202
    assert len(gh.state.dispatches) == 2
    second = gh.state.dispatches[1]
    assert second["inputs"]["head-sha"] == HEAD and second["inputs"]["base-sha"] == BASE
    assert second["inputs"]["filter"] == "bench_norm" and second["inputs"]["run-id"] != key
    assert sticky(gh).id == comment.id and "queued" in sticky(gh).body
    assert [r["content"] for r in gh.state.reactions if r["comment_id"] == own.id] == ["eyes", "rocket"]
    assert len(gh.state.check_runs) == 2
    improved = results_doc([bench("bench_norm[rows=4096]", "improvement", 0.8)], base_sha=BASE, head_sha=HEAD)
    finish_run(gh, scene, second, improved, client)
    latest = max(gh.state.check_runs.values(), key=lambda r: r["id"])
    assert latest["conclusion"] == "success"
    assert "improvement" in sticky(gh).body and sticky(gh).id == comment.id

    # 4. a read-only user: one polite refusal, nothing dispatched, never twice
    before = len(gh.state.issue_comments(P.REPO, 7))
    for comment_id in (7001, 7002):
        deliver(client, P.issue_comment("created", "/perf run", login="visitor", comment_id=comment_id))
    replies = gh.state.issue_comments(P.REPO, 7)[before:]
    assert len(replies) == 1 and "@visitor" in replies[0].body and "write" in replies[0].body
    assert len(gh.state.dispatches) == 2

    # 5. the same delivery again is a duplicate; an unhandled event is 204
    name, payload = P.issue_comment("created", "/perf run", login="visitor", comment_id=7003)
    body = P.encode(payload)
    headers = P.headers(name, body, delivery="fixed-guid")
    assert client.post("/webhook", data=body, headers=headers).status_code == 202
    assert client.post("/webhook", data=body, headers=headers).status_code == 200
    other = P.encode({"action": "opened"})
    assert client.post("/webhook", data=other, headers=P.headers("issues", other)).status_code == 204
    assert client.get("/").status_code == 200
    assert set(deliveries(app).values()) == {"done"}
