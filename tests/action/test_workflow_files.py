"""action.yml and the example workflow against the schemas GitHub's runner accepts
(check-jsonschema's built-in SchemaStore copies; no network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("check_jsonschema", reason="pip install check-jsonschema (a dev dependency)")


@pytest.mark.parametrize("schema, path", [
    ("vendor.github-actions", "action.yml"),
    ("vendor.github-workflows", "examples/workflows/perfgate.yml"),
])
def test_valid_against_githubs_schema(schema, path):
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(REPO_ROOT / path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _yaml(path: str) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((REPO_ROOT / path).read_text())


def test_action_passes_every_input_to_the_entry_and_declares_its_outputs():
    action = _yaml("action.yml")
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "compare")
    passed = {k for k in step["env"] if k.startswith("INPUT_")}
    expected = {"INPUT_" + name.upper().replace("-", "_") for name in action["inputs"]} - {"INPUT_PYTHON"}
    assert passed == expected
    assert all("shell" in s for s in action["runs"]["steps"] if "run" in s)
    assert {"results", "regressions", "improvements", "verdict"} <= set(action["outputs"])
    assert step["run"].strip().endswith("-m action'") or "-m action" in step["run"]


def test_example_workflow_is_least_privilege_and_cancels_superseded_runs():
    workflow = _yaml("examples/workflows/perfgate.yml")
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "checks": "write",
                                       "actions": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is True
    triggers = workflow.get("on") or workflow.get(True)  # YAML 1.1 reads the key `on` as true
    assert triggers["pull_request"]["types"] == ["labeled"]
    assert {"base-sha", "head-sha", "pr-number", "run-id"} <= set(triggers["workflow_dispatch"]["inputs"])
    job = workflow["jobs"]["compare"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
