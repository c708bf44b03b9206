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


@pytest.mark.parametrize("schema, path", [("vendor.github-actions", "action.yml")]
                         + [("vendor.github-workflows", w) for w in WORKFLOWS])
def test_valid_against_githubs_schema(schema, path):
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(REPO_ROOT / path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _yaml(path: str) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((REPO_ROOT / path).read_text())


def test_action_runs_three_phases_and_only_the_compare_has_no_token():
    action = _yaml("action.yml")
    steps = [s for s in action["runs"]["steps"] if "-m action" in str(s.get("run", ""))]
    assert [s["run"].split("-m action", 1)[1].strip(" '") for s in steps] == ["prepare", "compare", "publish"]
    expected = {"INPUT_" + name.upper().replace("-", "_") for name in action["inputs"]} - {"INPUT_PYTHON"}
    for step in steps:
        passed = {k for k in step["env"] if k.startswith("INPUT_")}
        wanted = expected - {"INPUT_GITHUB_TOKEN"} if "compare" in step["run"] else expected
        assert passed == wanted, step["name"]
        assert "github.token" not in str(step["env"]) and "secrets." not in str(step["env"])
    assert steps[1]["run"].startswith("exec ")  # no shell left waiting with the step's environment
    assert all("shell" in s for s in action["runs"]["steps"] if "run" in s)
    assert {"results", "regressions", "improvements", "verdict"} <= set(action["outputs"])
    assert all("steps.publish.outputs" in o["value"] for k, o in action["outputs"].items() if k != "artifact")


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


def test_example_workflows_have_the_least_permissions_of_their_mode():
    app = _yaml("examples/workflows/perfgate.yml")
    assert app["permissions"] == {"contents": "read", "pull-requests": "read"}  # the App writes, not the workflow
    assert {"base-sha", "head-sha", "pr-number", "run-id"} <= set((app.get("on") or app.get(True))["workflow_dispatch"]["inputs"])
    assert app["jobs"]["compare"]["runs-on"] == ["self-hosted", "gpu"]
    assert app["jobs"]["compare"]["steps"][1]["with"]["comment"] is False
    standalone = _yaml("examples/workflows/perfgate-standalone.yml")
    assert standalone["permissions"] == {"contents": "read", "pull-requests": "write"}  # its one comment
