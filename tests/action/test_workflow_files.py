"""action.yml and the example workflow against the schemas GitHub's runner accepts
(check-jsonschema's built-in SchemaStore copies; no network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("check_jsonschema", reason="pip install check-jsonschema (a dev dependency)")


WORKFLOWS = sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "examples" / "workflows").glob("*.yml"))


ACTIONS = ["action.yml", "comment/action.yml"]


@pytest.mark.parametrize("schema, path", [("vendor.github-actions", a) for a in ACTIONS]
                         + [("vendor.github-workflows", w) for w in WORKFLOWS])
def test_valid_against_githubs_schema(schema, path):
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(REPO_ROOT / path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _yaml(path: str) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((REPO_ROOT / path).read_text())


def test_action_runs_three_phases_and_only_prepare_holds_the_token():
    action = _yaml("action.yml")
    steps = [s for s in action["runs"]["steps"] if "-m action" in str(s.get("run", ""))]
    assert [s["run"].split("-m action", 1)[1].strip(" '") for s in steps] == ["prepare", "compare", "publish"]
    for step in steps:
        has_token = "INPUT_GITHUB_TOKEN" in step["env"]
        assert has_token == ("prepare" in step["run"]), step["name"]
        assert "INPUT_SANDBOX" in step["env"] or "publish" in step["run"]
        assert "github.token" not in str(step["env"]) and "secrets." not in str(step["env"])
        # the interpreter by the absolute path resolved before any PR code ran, isolated
        assert step["env"]["PERFGATE_PYTHON"] == "${{ steps.install.outputs.python }}"
        assert '"$PERFGATE_PYTHON" -I -m action' in step["run"]
    assert steps[1]["run"].startswith("exec ")  # no shell left waiting with the step's environment
    assert steps[2]["env"]["BASH_ENV"] == "" and steps[2]["env"]["LD_PRELOAD"] == ""
    assert all("shell" in s for s in action["runs"]["steps"] if "run" in s)
    assert {"results", "regressions", "improvements", "verdict"} <= set(action["outputs"])
    assert all("steps.publish.outputs" in o["value"] for k, o in action["outputs"].items() if k != "artifact")
    assert "comment" not in action["inputs"] and action["inputs"]["sandbox"]["default"] == "bwrap"


def _uses(document) -> list[str]:
    """Every ``uses:`` value in a workflow or action document."""
    found = []
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "uses":
                found.append(str(value))
            else:
                found += _uses(value)
    elif isinstance(document, list):
        for item in document:
            found += _uses(item)
    return found


@pytest.mark.parametrize("path", ACTIONS + WORKFLOWS)
def test_actions_are_pinned_by_commit_sha(path):
    """A tag can be moved to new code that then runs on the GPU runners (review N11). perfgate's
    own reference is pinned by ``perfgate init`` where it knows its commit."""
    for uses in _uses(_yaml(path)):
        if uses.startswith(("perfgate/perfgate@", "perfgate/perfgate/comment@", "./")):
            continue
        ref = uses.rsplit("@", 1)[1]
        assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), f"{path}: {uses} is not pinned"


@pytest.mark.parametrize("path", WORKFLOWS)
def test_example_workflows_keep_fork_code_and_tokens_apart(path):
    workflow = _yaml(path)
    triggers = workflow.get("on") or workflow.get(True)  # YAML 1.1 reads the key `on` as true
    self_hosted = any("self-hosted" in (job.get("runs-on") or []) for job in workflow["jobs"].values())
    if self_hosted:
        assert not {"pull_request", "pull_request_target", "issue_comment"} & set(triggers), triggers
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False
    assert workflow["concurrency"]["cancel-in-progress"] is True


def _permissions(workflow: dict, job: dict) -> dict:
    return job.get("permissions", workflow.get("permissions", "write-all (the default)")) or {}


@pytest.mark.parametrize("path", WORKFLOWS)
def test_no_job_on_a_self_hosted_runner_can_write(path):
    """The job that runs the pull request's code holds no token that can write (review N1)."""
    workflow = _yaml(path)
    for name, job in workflow["jobs"].items():
        if "self-hosted" in (job.get("runs-on") or []):
            permissions = _permissions(workflow, job)
            assert isinstance(permissions, dict) and "write" not in permissions.values(), (name, permissions)


def test_example_workflows_have_the_least_permissions_of_their_mode():
    app = _yaml("examples/workflows/perfgate.yml")
    assert app["permissions"] == {"contents": "read", "pull-requests": "read"}  # the App writes, not the workflow
    assert {"base-sha", "head-sha", "pr-number", "run-id"} <= set((app.get("on") or app.get(True))["workflow_dispatch"]["inputs"])
    # the runner group's labels when the App names one (a target with [runners.NAME]), else these
    assert app["jobs"]["compare"]["runs-on"] == "${{ fromJSON(inputs.runs-on || '[\"self-hosted\", \"gpu\"]') }}"
    assert {"runs-on", "runner", "bisect"} <= set((app.get("on") or app.get(True))["workflow_dispatch"]["inputs"])
    # runs of one PR on two runner groups, and a bisect, must not cancel one another
    assert "inputs.runner" in app["concurrency"]["group"] and "inputs.run-id" in app["concurrency"]["group"]
    standalone = _yaml("examples/workflows/perfgate-standalone.yml")
    assert standalone["permissions"] == {}
    compare, comment = standalone["jobs"]["compare"], standalone["jobs"]["comment"]
    assert compare["permissions"] == {"contents": "read", "pull-requests": "read"}
    # the comment: another job, on a GitHub-hosted runner that never ran the PR's code, after the GPU job
    assert comment["permissions"] == {"pull-requests": "write"} and comment["needs"] == "compare"
    assert "self-hosted" not in str(comment["runs-on"])
    assert [str(s["uses"]).split("@")[0] for s in comment["steps"]] == ["actions/download-artifact",
                                                                       "perfgate/perfgate/comment"]
    assert comment["steps"][0]["with"]["name"] == "${{ needs.compare.outputs.artifact }}"


def test_example_workflows_end_the_compare_before_the_job_times_out():
    """The sandbox's deadline (input sandbox-time) is below the job's timeout-minutes, so a hang
    ends with perfgate's error naming the limit, not with GitHub cancelling the job (review P8)."""
    from runner.sandbox.limits import parse_duration

    app = _yaml("examples/workflows/perfgate.yml")["jobs"]["compare"]
    step = next(s for s in app["steps"] if s.get("id") == "perfgate")
    assert app["timeout-minutes"] == "${{ inputs.bisect == 'true' && 360 || 60 }}"
    assert step["with"]["sandbox-time"] == "${{ inputs.bisect == 'true' && '350m' || '55m' }}"
    assert parse_duration("350m") < 360 * 60 and parse_duration("55m") < 60 * 60
    standalone = _yaml("examples/workflows/perfgate-standalone.yml")["jobs"]["compare"]
    step = next(s for s in standalone["steps"] if s.get("id") == "perfgate")
    assert parse_duration(step["with"]["sandbox-time"]) < standalone["timeout-minutes"] * 60
