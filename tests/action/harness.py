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
