"""Deliveries and servers the App meets on real GitHub (tests/app/cases/github/, copied from the
project's shared cases): "Re-run all checks", and a GitHub Enterprise Server that refuses
``return_run_details`` on the workflow dispatch and gives no run id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit import app_fakes
from testkit import payloads as P
from testkit.fake_github import FakeGitHub
from testkit.results_doc import bench, results_doc

from .flow import deliver, sticky, upload

CASES = Path(__file__).parent / "cases" / "github"
HEAD, BASE = "1" * 40, "2" * 40


def case(name: str) -> tuple[str, dict]:
    doc = json.loads((CASES / name).read_text())
    return doc["event"], doc["payload"]


def _ghes_dispatch(default):
    """GitHub Enterprise Server before 3.21: 422 for ``return_run_details``, else 204, no id."""
    def handler(ctx):
        if "return_run_details" in (ctx.body or {}):
            return 422, {"message": 'Invalid request.\n\n"return_run_details" is not a permitted key.',
                         "documentation_url": "https://docs.github.com/enterprise-server@3.14/rest"}
        return default(ctx)
    return handler


@pytest.fixture
def fake_github(github_openapi, scene):  # noqa: F811 - this module's GitHub is an Enterprise Server
    from testkit.fake_github.app import HANDLERS

    handlers = {**app_fakes.handlers(scene),
                "actions/create-workflow-dispatch": _ghes_dispatch(HANDLERS["actions/create-workflow-dispatch"])}
    with FakeGitHub(github_openapi, handlers=handlers) as gh:
        gh.state.add_repo("octo/demo")
        gh.state.add_token("ghs_nobody")
        gh.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
        gh.state.set_permission(P.REPO, "maintainer", "write")
        yield gh
        gh.violations[:] = [v for v in gh.violations if "create-workflow-dispatch" not in v]  # the 422 is GHES's
        gh.assert_no_violations()


def _completed(gh, client, dispatch, **kw):
    gh.state.workflow_runs[dispatch["run_id"]].update(status="completed", conclusion="success")
    return deliver(client, P.workflow_run("completed", dispatch["run_id"], head_sha=HEAD, **kw))


def test_ghes_dispatch_without_run_details_is_matched_by_the_run_name(client, fake_github, scene):
    gh = fake_github
    assert deliver(client, case("pull_request_labeled_for_ghes.json")).status_code == 202
    (dispatch,) = gh.state.dispatches  # sent again without return_run_details after the 422
    assert [c.status for c in gh.calls("actions/create-workflow-dispatch")] == [422, 204]
    (check,) = gh.state.check_runs.values()
    assert check["status"] == "queued" and "workflow" not in (check.get("output") or {}).get("title", "").lower()
    key = dispatch["inputs"]["run-id"]
    upload(scene, dispatch, results_doc([bench("bench_norm", "improvement", 0.8)], base_sha=BASE, head_sha=HEAD))

    # Another workflow that names itself like ours (a PR's own workflow can) is not matched.
    _completed(gh, client, dispatch, display_title=f"perfgate {key}", event="pull_request")
    _completed(gh, client, dispatch, display_title=f"perfgate {key}", path=".github/workflows/other.yml")
    assert check["status"] == "queued"

    _completed(gh, client, dispatch, display_title=f"perfgate {key}")
    assert check["status"] == "completed" and check["conclusion"] == "success"
    assert "bench_norm" in sticky(gh).body


def test_rerun_all_checks_runs_perfgate_again_once(client, fake_github):
    gh = fake_github
    deliver(client, case("pull_request_labeled_for_ghes.json"))
    assert len(gh.state.dispatches) == 1
    rerun = case("check_suite_rerequested.json")
    assert rerun[1]["check_suite"]["pull_requests"] == []  # as GitHub sends it: no PR number to go by
    rerun[1]["check_suite"]["head_sha"] = HEAD
    assert deliver(client, rerun).status_code == 202
    assert len(gh.state.dispatches) == 2 and gh.state.dispatches[1]["inputs"]["head-sha"] == HEAD
    first, second = sorted(gh.state.check_runs.values(), key=lambda r: r["id"])
    assert first["conclusion"] == "cancelled" and second["status"] == "queued"
    deliver(client, rerun)  # the same request delivered again starts nothing
    assert len(gh.state.dispatches) == 2


def test_rerun_all_checks_on_a_commit_perfgate_never_ran_does_nothing(client, fake_github):
    rerun = case("check_suite_rerequested.json")
    assert deliver(client, rerun).status_code == 202
    assert fake_github.state.dispatches == []
