"""``python -m action`` as a real subprocess in a simulated Actions step, with the real
``perfgate compare`` on a generated repository whose head commit does four times the work,
against the fake GitHub on loopback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner import results as results_mod
from runner.report import MARKER
from tests.action.events import pull_request_labeled, workflow_dispatch
from tests.action.harness import actions_env, read_outputs, subprocess_env
from tests.action.target_repo import make_target_repo

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO = "octo/demo"


def run_action(env: dict[str, str], cwd: Path, *phase: str) -> subprocess.CompletedProcess:
    # Installed in a real run; here the source tree is the installation. cwd is neutral, as in action.yml.
    # The sandbox where bubblewrap is installed (CI installs it); test_sandbox*.py test it apart.
    # (without it, sandbox: none, which inside Actions needs the workflow's acknowledgement)
    sandboxed = {"INPUT_SANDBOX": "bwrap"} if shutil.which("bwrap") else {
        "INPUT_SANDBOX": "none", "INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY": "true"}
    full = subprocess_env({**sandboxed, **env, "PYTHONPATH": str(REPO_ROOT)})
    return subprocess.run([sys.executable, "-m", "action", *phase], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=300)


def errors(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stdout.splitlines() if line.startswith("::error")]


# The fast lane's real compare of the Action (four times the work: no load hides it).
def test_pull_request_run_then_the_comment_job_comments_once_and_updates(tmp_path, fake_github):
    target = make_target_repo(tmp_path / "target")
    fake_github.state.add_token("ghs_write")
    fake_github.state.add_pull(REPO, 5, head_sha=target.head_sha, base_sha=target.base_sha, labels=["performance"])
    event = pull_request_labeled(number=5, base_sha=target.base_sha, head_sha=target.head_sha)

    outputs = []
    for attempt in ("run1", "run2"):
        env = actions_env(tmp_path / attempt, api_url=fake_github.url, workspace=target.checkout,
                          event_name="pull_request", event=event, github_token="ghs_write", max_time="30")
        proc = run_action(env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not errors(proc) and "Traceback" not in proc.stderr
        summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
        assert summary.startswith(MARKER) and "bench_sum" in summary and "regression" in summary
        outputs.append(read_outputs(Path(env["GITHUB_OUTPUT"])))
        # the comment job: another runner, the downloaded artifact, the token that may write
        comment_env = actions_env(tmp_path / f"{attempt}-comment", api_url=fake_github.url, workspace=tmp_path,
                                  event_name="workflow_dispatch", event=None, github_token="ghs_write",
                                  results=env["PERFGATE_OUT_DIR"], pr_number="5")
        proc = run_action(comment_env, tmp_path, "comment")
        assert proc.returncode == 0 and not errors(proc), proc.stdout + proc.stderr

    for out in outputs:
        # four times the work is never unchanged or faster; on a machine loaded past its cores the
        # 30 s budget may leave it undecided, which the outputs must then say (the slow lane's
        # compares prove that changes are found)
        assert out["verdict"] in ("regression", "inconclusive"), out
        assert out["regressions"] == ("1" if out["verdict"] == "regression" else "0"), out
        doc = results_mod.load(out["results"])
        assert results_mod.verdict_of(doc["benchmarks"][0]) == out["verdict"]
        assert doc["pull_request"]["number"] == 5 and doc["head"]["sha"] == target.head_sha
        assert doc["run_url"].endswith("/actions/runs/4242")
    comments = fake_github.state.issue_comments(REPO, 5)
    assert len(comments) == 1, [c.body[:80] for c in comments]
    assert comments[0].body.startswith(MARKER) and "bench_sum" in comments[0].body
    assert len(fake_github.calls("issues/create-comment")) == 1
    assert len(fake_github.calls("issues/update-comment")) == 1


@pytest.mark.parametrize("event_name, event, message", [
    ("workflow_dispatch", workflow_dispatch(base_sha=None, head_sha=None, pr_number=5), "missing SHAs"),
    ("issue_comment", {"action": "created", "comment": {"body": "/perf run"}}, "issue_comment event is not handled"),
])
def test_bad_input_is_one_error_line_without_traceback(tmp_path, fake_github, event_name, event, message):
    target = make_target_repo(tmp_path / "target")
    env = actions_env(tmp_path / "run", api_url=fake_github.url, workspace=target.checkout, event_name=event_name,
                      event=event, github_token="ghs_write")
    proc = run_action(env, cwd=tmp_path)
    assert proc.returncode == 2
    assert len(errors(proc)) == 1 and message in errors(proc)[0], proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert fake_github.requests == []


# The workflow's acknowledgement is stated either way: run_action gives it where bubblewrap is
# not installed.
@pytest.mark.parametrize("extra, message", [
    ({"INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY": "false"},
     "set unsafe-no-sandbox-job-is-read-only: true"),
    ({"INPUT_UNSAFE_NO_SANDBOX_JOB_IS_READ_ONLY": "true",
      "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x/"},
     "hold ACTIONS_ID_TOKEN_REQUEST_URL"),
])
def test_sandbox_none_stops_before_any_code_runs_inside_actions(tmp_path, fake_github, extra,
                                                                message):
    """Security review 2026-12-06 N1/F1: the prepare step (the first) refuses sandbox: none in one
    line, before it fetches anything or calls GitHub; nothing is written for the artifact."""
    target = make_target_repo(tmp_path / "target")
    env = actions_env(tmp_path / "run", api_url=fake_github.url, workspace=target.checkout,
                      event_name="workflow_dispatch", github_token="ghs_write",
                      event=workflow_dispatch(base_sha=target.base_sha, head_sha=target.head_sha,
                                              pr_number=5))
    for phase in ("prepare", "compare"):
        proc = run_action({**env, "INPUT_SANDBOX": "none", **extra}, tmp_path, phase)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert len(errors(proc)) == 1 and message in errors(proc)[0], proc.stdout
        assert "Traceback" not in proc.stdout + proc.stderr
    assert fake_github.requests == []
    out = Path(env["PERFGATE_OUT_DIR"])
    assert not out.exists() or not any(out.iterdir())
