"""The plan from the Actions environment (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.environment import ActionInputError, get_input, parse_fraction, plan_from_environment
from tests.action.events import pull_request_labeled, workflow_dispatch

BASE, HEAD = "a" * 40, "b" * 40


def env(**extra: str) -> dict[str, str]:
    base = {"GITHUB_REPOSITORY": "octo/demo", "GITHUB_WORKSPACE": "/ws", "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_API_URL": "https://api.github.com", "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "1",
            "RUNNER_TEMP": "/tmp/runner"}
    base.update(extra)
    return base


def test_pull_request_event_uses_the_pr_shas_not_the_merge_commit():
    event = pull_request_labeled(number=12, base_sha=BASE, head_sha=HEAD)
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="pull_request", GITHUB_SHA="c" * 40), event)
    assert (plan.base_ref, plan.head_ref) == (BASE, HEAD)
    assert plan.pr_number == 12 and plan.pr_url == "https://github.com/octo/demo/pull/12"
    assert (plan.base_label, plan.head_label) == ("main", "feature")
    assert plan.labels == ("performance",) and plan.title == "Fuse the sum loop"
    assert not plan.is_fork and plan.sandbox == "bwrap" and plan.sandbox_paths == ()
    assert plan.run_url == "https://github.com/octo/demo/actions/runs/77"
    assert plan.out_dir == Path("/tmp/runner/perfgate")


@pytest.mark.parametrize("event_name", ["pull_request", "pull_request_target"])
def test_a_fork_pull_request_is_known_as_one(event_name):
    event = pull_request_labeled(number=3, base_sha=BASE, head_sha=HEAD, head_repo="stranger/demo")
    assert plan_from_environment(env(GITHUB_EVENT_NAME=event_name), event).is_fork


def test_workflow_dispatch_reads_the_apps_inputs():
    event = workflow_dispatch(base_sha=BASE, head_sha=HEAD, pr_number=9, run_id="run-42")
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_RUN_ATTEMPT="2"), event)
    assert (plan.base_ref, plan.head_ref, plan.pr_number, plan.run_id) == (BASE, HEAD, 9, "run-42")
    assert plan.run_url == "https://github.com/octo/demo/actions/runs/77/attempts/2"
    assert plan.title is None and not plan.is_fork


def test_explicit_inputs_win_over_the_event():
    event = pull_request_labeled(number=12, base_sha=BASE, head_sha=HEAD)
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="pull_request", INPUT_BASE_REF="v1.0",
                                     **{"INPUT_HEAD-REF": "HEAD"}), event)
    assert (plan.base_ref, plan.head_ref) == ("v1.0", "HEAD")


@pytest.mark.parametrize("inputs, missing", [({"head_sha": HEAD}, "base-sha"), ({}, "base-sha and head-sha")])
def test_workflow_dispatch_without_shas_names_them(inputs, missing):
    event = workflow_dispatch(base_sha=None, head_sha=inputs.get("head_sha"))
    with pytest.raises(ActionInputError, match=f"missing SHAs.*no {missing} input"):
        plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch"), event)


def test_unhandled_event_without_refs_is_an_error_naming_the_event():
    with pytest.raises(ActionInputError, match="the push event is not handled.*base-ref and head-ref"):
        plan_from_environment(env(GITHUB_EVENT_NAME="push"), {"ref": "refs/heads/main"})


def test_unhandled_event_with_both_refs_is_fine():
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="push", INPUT_BASE_REF="main~1", INPUT_HEAD_REF="main"), {})
    assert (plan.base_ref, plan.head_ref, plan.pr_number) == ("main~1", "main", None)


def test_pull_request_payload_without_the_pull_request_object():
    with pytest.raises(ActionInputError, match="no pull_request object"):
        plan_from_environment(env(GITHUB_EVENT_NAME="pull_request"), {"action": "labeled"})


def test_inputs_are_parsed_and_checked():
    event = workflow_dispatch(base_sha=BASE, head_sha=HEAD)
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", INPUT_THRESHOLD="3%",
                                     INPUT_MAX_TIME="120", INPUT_DEVICE="cuda", INPUT_PROFILE="false",
                                     INPUT_SANDBOX="none", INPUT_FAIL_ON_REGRESSION="true",
                                     INPUT_CONFIG="ci/perfgate.toml", INPUT_PATH="src/target"), event)
    assert plan.threshold == pytest.approx(0.03) and plan.max_time == 120.0 and plan.device == "cuda"
    assert plan.profile is False and plan.sandbox == "none" and plan.fail_on_regression is True
    assert plan.handoff == Path("/tmp/runner/perfgate-action")  # beside the artifact folder, not in it
    assert plan.workspace == Path("/ws/src/target") and plan.config == Path("/ws/src/target/ci/perfgate.toml")
    for bad, match in ((dict(INPUT_THRESHOLD="2"), "threshold"), (dict(INPUT_DEVICE="tpu"), "device"),
                       (dict(INPUT_SANDBOX="docker"), "sandbox"), (dict(INPUT_MAX_TIME="-1"), "max-time"),
                       (dict(INPUT_SANDBOX_PATHS="opt/conda"), "sandbox-paths")):
        with pytest.raises(ActionInputError, match=match):
            plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", **bad), event)


def test_empty_inputs_are_unset_and_the_token_is_not_in_the_repr():
    e = {"INPUT_FILTER": "  ", "INPUT_GITHUB-TOKEN": "ghs_secret"}
    assert get_input(e, "filter") is None and get_input(e, "github-token") == "ghs_secret"
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", **e),
                                 workflow_dispatch(base_sha=BASE, head_sha=HEAD))
    assert plan.token == "ghs_secret" and "ghs_secret" not in repr(plan)


def test_missing_repository_variable():
    with pytest.raises(ActionInputError, match="GITHUB_REPOSITORY"):
        plan_from_environment({"GITHUB_EVENT_NAME": "push"}, {})


def test_parse_fraction_accepts_percent_and_fraction():
    assert parse_fraction("0.05", "t") == pytest.approx(0.05)
    assert parse_fraction("5%", "t") == pytest.approx(0.05)
    assert parse_fraction(None, "t") is None


def test_the_gates_settings_come_from_the_dispatched_default_branch_never_the_head():
    dispatched = workflow_dispatch(base_sha=BASE, head_sha=HEAD, pr_number=9)
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_SHA="d" * 40), dispatched)
    assert plan.settings_ref == "d" * 40
    named = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_SHA="d" * 40,
                                      INPUT_CONFIG="ci/perfgate.toml"), dispatched)
    assert (named.settings_ref, named.config_path, named.config) == ("d" * 40, "ci/perfgate.toml", None)
    # pull_request: GITHUB_SHA and the checkout are the PR's merge commit, so the base revision's
    labeled = pull_request_labeled(number=12, base_sha=BASE, head_sha=HEAD)
    assert plan_from_environment(env(GITHUB_EVENT_NAME="pull_request", GITHUB_SHA="c" * 40), labeled).settings_ref is None
    named = plan_from_environment(env(GITHUB_EVENT_NAME="pull_request", INPUT_CONFIG="ci/p.toml"), labeled)
    assert (named.settings_ref, named.config_path, named.config) == (BASE, "ci/p.toml", None)
    # explicit refs on another event: the file in the checkout
    other = plan_from_environment(env(GITHUB_EVENT_NAME="schedule", INPUT_BASE_REF=BASE, INPUT_HEAD_REF=HEAD,
                                      INPUT_CONFIG="ci/p.toml"), {})
    assert (other.settings_ref, other.config) == (None, Path("/ws/ci/p.toml"))


def test_the_comment_phase_names_each_missing_input():
    from action.environment import comment_plan

    full = env(INPUT_RESULTS="perfgate-results", INPUT_PR_NUMBER="12", INPUT_GITHUB_TOKEN="ghs_w")
    plan = comment_plan(full)
    assert plan.results_dir == Path("/ws/perfgate-results") and plan.pr_number == 12 and plan.token == "ghs_w"
    assert plan.run_url == "https://github.com/octo/demo/actions/runs/77" and "ghs_w" not in repr(plan)
    for missing, match in (("INPUT_RESULTS", "input results"), ("INPUT_PR_NUMBER", "input pr-number"),
                           ("INPUT_GITHUB_TOKEN", "pull-requests: write")):
        with pytest.raises(ActionInputError, match=match):
            comment_plan({k: v for k, v in full.items() if k != missing})
    with pytest.raises(ActionInputError, match="pull request number"):
        comment_plan({**full, "INPUT_PR_NUMBER": "12; rm -rf"})
    # security review P1: the artifact's files in the workspace sat on the import path of the job
    # that holds the writing token
    for workspace in (".", "./", "sub/.."):
        with pytest.raises(ActionInputError, match="the workspace itself"):
            comment_plan({**full, "INPUT_RESULTS": workspace})


def test_the_comment_action_runs_no_python_or_shell_file_the_artifact_could_have_put_in_reach():
    import yaml

    steps = yaml.safe_load((Path(__file__).resolve().parents[2] / "comment" / "action.yml")
                           .read_text())["runs"]["steps"]
    for step in steps:
        assert step["working-directory"] == "${{ runner.temp }}", step["name"]
        assert step["env"]["BASH_ENV"] == step["env"]["ENV"] == step["env"]["LD_PRELOAD"] == "", \
            step["name"]
        for line in step["run"].splitlines():
            if "python" in line and " -m " in line:
                assert " -I -m " in line, line


def test_a_bisect_is_asked_for_by_its_input():
    event = workflow_dispatch(base_sha=BASE, head_sha=HEAD, pr_number=None, run_id="run-7")
    plan = plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", INPUT_BISECT="true",
                                     INPUT_FILTER="bench_norm"), event)
    assert plan.bisect and plan.filter == "bench_norm" and (plan.base_ref, plan.head_ref) == (BASE, HEAD)
    assert not plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch"), event).bisect
    with pytest.raises(ActionInputError, match="bisect"):
        plan_from_environment(env(GITHUB_EVENT_NAME="workflow_dispatch", INPUT_BISECT="maybe"), event)


def test_sandbox_none_refuses_to_start_inside_github_actions_without_the_acknowledgement():
    """Security review 2026-12-06 N1/F1: with sandbox: none the PR's code took upload-artifact's
    runtime token, the job token and the runner's credentials. Inside Actions it now needs the
    workflow's explicit statement; an OIDC-capable job never; a developer's machine as before."""
    event = workflow_dispatch(base_sha=BASE, head_sha=HEAD)
    actions = dict(GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_ACTIONS="true",
                   INPUT_SANDBOX="none")
    ack = "unsafe-no-sandbox-job-is-read-only: true"
    with pytest.raises(ActionInputError, match=ack) as refused:
        plan_from_environment(env(**actions), event)
    assert "ACTIONS_RUNTIME_TOKEN" in str(refused.value) and "sandbox: bwrap" in str(refused.value)
    for said in ("false", "no"):
        with pytest.raises(ActionInputError, match="refused"):
            plan_from_environment(env(**actions, INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY=said),
                                  event)
    said = dict(actions, INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY="true")
    ok = plan_from_environment(env(**said), event)
    assert ok.sandbox == "none"
    # a job that can mint an OIDC token (cloud credentials), or that exported the runtime token
    for held in ("ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                 "ACTIONS_RUNTIME_TOKEN"):
        with pytest.raises(ActionInputError, match=f"hold {held}"):
            plan_from_environment(env(**said, **{held: "https://x/"}), event)
    # the sandbox needs no acknowledgement, and outside Actions none runs as before
    sandboxed = dict(actions, INPUT_SANDBOX="bwrap")
    assert plan_from_environment(env(**sandboxed), event).sandbox == "bwrap"
    local = dict(actions, GITHUB_ACTIONS="")
    assert plan_from_environment(env(**local), event).sandbox == "none"
    with pytest.raises(ActionInputError, match="must be true or false"):
        plan_from_environment(env(**actions, INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY="yes please"),
                              event)
