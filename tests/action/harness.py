"""A simulated GitHub Actions step environment for ``python -m action``."""

from __future__ import annotations

import json
import os
from pathlib import Path


def actions_env(tmp: Path, *, api_url: str, workspace: Path, event_name: str, event: dict | None,
                run_id: str = "4242", **inputs: str) -> dict[str, str]:
    """Environment variables as the runner sets them for a composite step, plus ``INPUT_*``
    (keyword ``fail_on_regression="true"`` becomes ``INPUT_FAIL_ON_REGRESSION``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {
        "GITHUB_ACTIONS": "true", "CI": "true",
        "GITHUB_REPOSITORY": "octo/demo", "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": api_url,
        "GITHUB_WORKSPACE": str(workspace), "GITHUB_EVENT_NAME": event_name, "GITHUB_RUN_ID": run_id,
        "GITHUB_RUN_ATTEMPT": "1", "RUNNER_TEMP": str(tmp / "runner-temp"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"), "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "PERFGATE_OUT_DIR": str(tmp / "out"),
    }
    if event is not None:
        path = tmp / "event.json"
        path.write_text(json.dumps(event))
        env["GITHUB_EVENT_PATH"] = str(path)
    for name, value in inputs.items():
        env[f"INPUT_{name.upper()}"] = value
    for name in ("summary.md", "output.txt"):
        (tmp / name).touch()
    return env


def subprocess_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` on top of what a process needs to start (PATH, HOME), without the caller's own
    GitHub variables leaking in."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_"))}
    return {**keep, **env}


def read_outputs(path: Path) -> dict[str, str]:
    """Parse ``$GITHUB_OUTPUT`` (``name=value`` and ``name<<DELIM`` … ``DELIM``)."""
    outputs: dict[str, str] = {}
    lines = path.read_text("utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            outputs[name] = "\n".join(lines[i + 1:j])
            i = j + 1
        else:
            name, _, value = line.partition("=")
            outputs[name] = value
            i += 1
    return outputs


def action_steps(action_yml: Path) -> list[dict]:
    """The steps of ``action.yml`` that run ``python -m action <phase>``, in order."""
    from ruamel.yaml import YAML

    action = YAML(typ="safe").load(action_yml.read_text())
    return [s for s in action["runs"]["steps"] if "-m action" in str(s.get("run", ""))]


def expand(text: str, values: dict[str, str]) -> str:
    """``${{ inputs.x }}`` / ``${{ runner.temp }}`` / ``${{ github.token }}`` replaced from
    ``values`` (keys as written inside the braces); anything else is a test error."""
    import re

    def sub(match):
        key = match.group(1).strip()
        if key not in values:
            raise KeyError(f"no value for ${{{{ {key} }}}} in the test")
        return values[key]
    return re.sub(r"\$\{\{(.*?)\}\}", sub, text)


def run_action_steps(action_yml: Path, step_env: dict[str, str], inputs: dict[str, str], *, job_env: dict[str, str],
                     runner_temp: Path, timeout: float = 300):
    """Run the phase steps of ``action.yml`` as the runner would: each with ``job_env`` (what the
    whole job sees, e.g. a workflow-level ``GITHUB_TOKEN``), ``step_env`` (the runner's
    ``GITHUB_*`` variables) and the step's own ``env:`` with its expressions filled in from
    ``inputs`` (action.yml's defaults otherwise) and ``runner.temp``; ``run:`` through bash in
    the step's working directory. Stops after the first failing step.

    Returns: ``[(step name, CompletedProcess)]``.
    """
    import subprocess

    from ruamel.yaml import YAML

    action = YAML(typ="safe").load(action_yml.read_text())
    values = {"runner.temp": str(runner_temp), "github.token": inputs.get("github-token", "")}
    for name, spec in action["inputs"].items():
        default = str(spec.get("default", ""))
        values[f"inputs.{name}"] = inputs.get(name, expand(default, values) if "${{" in default else default)
    done = []
    for step in action_steps(action_yml):
        env = {**subprocess_env(job_env), **step_env,
               **{k: expand(str(v), values) for k, v in (step.get("env") or {}).items()}}
        cwd = expand(str(step.get("working-directory", ".")), values)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=timeout)
        done.append((step["name"], proc))
        if proc.returncode != 0:
            break
    return done
