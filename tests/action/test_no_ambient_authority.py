"""The pull request's code gets no credential (security review F1): the action run as the App
dispatches it, through action.yml's own steps, with a token in the job's environment and the
git credentials ``actions/checkout`` persists (``.git/config`` up to v5, an included file under
``RUNNER_TEMP`` from v6). The head revision's ``install`` command and benchmark module record
everything they can read — their environment, every readable ``/proc/<pid>/environ``, the git
configuration their worktree shows, the clone's configuration files by path — and the test
looks for the secrets in it."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from tests.action.events import workflow_dispatch
from tests.action.harness import actions_env, run_action_steps
from tests.action.target_repo import git

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghs_FAKEWORKFLOWTOKEN0123456789abcdef"
PERSISTED = "ghs_PERSISTEDCHECKOUTTOKEN98765"
INCLUDED = "ghs_INCLUDEDCREDENTIALSFILE4242"

#: What the PR's code does: write down all it can see. ``{out}`` and ``{paths}`` are filled in.
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
    seen["leftover"] = subprocess.Popen(["sleep", "300"], start_new_session=False).pid
    name = f"{{where}}-{{os.getpid()}}.json"
    with open(os.path.join({out!r}, name), "w") as fh:
        json.dump(seen, fh)
'''

BENCH = '''\
import record_env
import work

record_env.record("benchmark")


def bench_sum(device):
    return lambda: work.work(300)
'''

WORK = "def work(n):\n    return sum(i * i for i in range(n))\n"

CONFIG = '''\
device = "cpu"
install = "python -c 'import record_env; record_env.record(\\"install\\")'"
min_rounds = 2
max_rounds = 6
pair_rounds = 2
min_sample_time = 0.001
max_time = 10
profile = false
'''


def _basic(token: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def _target(root: Path, records: Path, runner_temp: Path):
    """origin with base and head (head adds the recorder to its benchmark), and a one-deep
    checkout holding the credentials actions/checkout persists."""
    origin, checkout = root / "origin", root / "checkout"
    include = runner_temp / "git-credentials-1234.config"
    paths = [str(checkout / ".git" / "config"), str(include)]
    (origin / "benchmarks").mkdir(parents=True)
    git(origin, "init", "-q")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    (origin / "work.py").write_text(WORK)
    (origin / "perfgate.toml").write_text(CONFIG)
    (origin / "record_env.py").write_text("def record(where):\n    pass\n")
    (origin / "benchmarks" / "bench_work.py").write_text(BENCH)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    base_sha = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-qb", "feature")
    (origin / "record_env.py").write_text(RECORDER.format(out=str(records), paths=paths))
    git(origin, "commit", "-qam", "head: look around")
    head_sha = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-q", "main")
    git(root, "clone", "-q", "--depth=1", origin.as_uri(), str(checkout))
    # actions/checkout@v4 with persist-credentials: true ...
    git(checkout, "config", "--local", "http.https://github.com/.extraheader", _basic(PERSISTED))
    # ... and @v6: a credentials file under RUNNER_TEMP, included by the clone's config
    runner_temp.mkdir(parents=True, exist_ok=True)
    include.write_text(f'[http "https://github.com/"]\n\textraheader = {_basic(INCLUDED)}\n')
    git(checkout, "config", "--local", "include.path", str(include))
    return checkout, base_sha, head_sha


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _secrets_in(text: str) -> list[str]:
    encoded = [base64.b64encode(f"x-access-token:{t}".encode()).decode() for t in (TOKEN, PERSISTED, INCLUDED)]
    return [s for s in (TOKEN, PERSISTED, INCLUDED, *encoded) if s in text]


@pytest.mark.slow
def test_pull_request_code_sees_no_token_and_no_git_credential(tmp_path, fake_github):
    records = tmp_path / "records"
    records.mkdir()
    runner_temp = tmp_path / "runner-temp"
    checkout, base_sha, head_sha = _target(tmp_path / "target", records, runner_temp)
    fake_github.state.add_token(TOKEN)
    fake_github.state.add_pull("octo/demo", 7, head_sha=head_sha, base_sha=base_sha, title="Faster sums")
    event = workflow_dispatch(base_sha=base_sha, head_sha=head_sha, pr_number=7, run_id="pg-1")
    step_env = actions_env(tmp_path / "step", api_url=fake_github.url, workspace=checkout,
                           event_name="workflow_dispatch", event=event)
    step_env.update(RUNNER_TEMP=str(runner_temp), GITHUB_ENV=str(tmp_path / "step" / "env.txt"),
                    GITHUB_PATH=str(tmp_path / "step" / "path.txt"))
    step_env.pop("PERFGATE_OUT_DIR")  # action.yml sets it
    # A workflow that puts the token into the whole job's environment, and the runner's own tokens.
    job_env = {"GITHUB_TOKEN": TOKEN, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": TOKEN,
               "PYTHONPATH": str(REPO_ROOT), "PERFGATE_PYTHON": "python3"}
    import sys

    steps = run_action_steps(REPO_ROOT / "action.yml", step_env,
                             {"github-token": TOKEN, "comment": "false", "run-id": "pg-1", "python": sys.executable},
                             job_env=job_env, runner_temp=runner_temp)
    for name, proc in steps:
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}\n{proc.stderr}"
    out = runner_temp / "perfgate"
    doc = json.loads((out / "results.json").read_text())
    assert doc["head"]["sha"] == head_sha and doc["run_id"] == "pg-1"
    assert doc["intent"]["source"] == "pull request and commits"  # the PR's text came through prepare

    seen = [json.loads(p.read_text()) for p in sorted(records.glob("*.json"))]
    assert {s["where"] for s in seen} == {"install", "benchmark"}, [s["where"] for s in seen]
    for s in seen:
        leaks = _secrets_in(json.dumps(s))
        assert leaks == [], f"{s['where']} read {leaks}"
        assert not {k for k in s["env"] if k.startswith(("INPUT_", "ACTIONS_", "GITHUB_"))}, sorted(s["env"])
        assert "extraheader" not in s["git_config"].lower()
        assert str(checkout) not in s["git_remote"]  # the worktree is not the clone's
        assert s["proc"], "the recorder could read no /proc/<pid>/environ at all"
        assert not _running(s["leftover"]), f"a process the {s['where']} started outlived the compare step"
    # the token-holding steps run before and after the one that runs the PR's code
    assert [name for name, _ in steps] == ["Prepare (fetch both commits; no pull request code runs here)",
                                           "Compare base and head (no token in this step)", "Publish the report"]
    # The clone itself no longer holds them either (the notice names what was removed).
    config = subprocess.run(["git", "-C", str(checkout), "config", "--list", "--includes"], capture_output=True,
                            text=True).stdout
    assert "extraheader" not in config
    prepare_log = steps[0][1].stdout
    assert "::notice::perfgate removed the git credentials" in prepare_log and not _secrets_in(prepare_log)
