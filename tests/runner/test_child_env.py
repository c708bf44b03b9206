"""The environment of the target's processes is an allow-list (security review F1)."""

from __future__ import annotations

import os

import pytest

from runner.sandbox.child_env import child_environment

STEP = {
    "PATH": "/usr/bin", "HOME": "/home/runner", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    "CUDA_VISIBLE_DEVICES": "0", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "PYTHONPATH": "/opt/perfgate",
    "OMP_NUM_THREADS": "4", "PERFGATE_CPUS": "1,2", "TORCH_HOME": "/cache/torch",
    # what must never reach the target
    "GITHUB_TOKEN": "ghs_x", "GH_TOKEN": "ghp_x", "INPUT_GITHUB_TOKEN": "ghs_x", "INPUT_FILTER": "sum",
    "ACTIONS_RUNTIME_TOKEN": "x", "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x", "GITHUB_ENV": "/tmp/env",
    "GITHUB_OUTPUT": "/tmp/out", "GITHUB_PATH": "/tmp/path", "GITHUB_STEP_SUMMARY": "/tmp/summary",
    "GITHUB_REPOSITORY": "octo/demo", "SSH_AUTH_SOCK": "/tmp/agent", "AWS_SECRET_ACCESS_KEY": "k",
    "PERFGATE_SESSION_SECRET": "s", "PYTHON_KEYRING_PASSWORD": "p", "NPM_TOKEN": "n", "HTTPS_PROXY": "http://p",
    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraheader", "GIT_CONFIG_VALUE_0": "AUTHORIZATION: x",
}


def test_only_allowed_names_pass_and_git_config_is_isolated():
    env = child_environment(STEP)
    kept = {"PATH", "HOME", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "PYTHONPATH",
            "OMP_NUM_THREADS", "PERFGATE_CPUS", "TORCH_HOME"}
    assert set(env) == kept | {"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TERMINAL_PROMPT"}
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert "AUTHORIZATION" not in str(env)


def test_a_deployment_may_add_names_but_never_credentials():
    env = child_environment({**STEP, "PERFGATE_CHILD_ENV": "HTTPS_PROXY, GITHUB_TOKEN,NPM_TOKEN"})
    assert env["HTTPS_PROXY"] == "http://p"
    assert "GITHUB_TOKEN" not in env and "NPM_TOKEN" not in env


@pytest.mark.parametrize("name", ["PERFGATE_DATABASE_URL", "TORCH_HUB_CREDS", "PYTHON_INDEX_PAT", "CUDA_SENTRY_DSN",
                                  "PERFGATE_SIGNING_KEY", "TRITON_COOKIE", "PERFGATE_WEBHOOK_URL"])
def test_credentials_under_an_allowed_prefix_stay_out(name):
    """Red team: the allowed prefixes (PERFGATE_, PYTHON, CUDA, TORCH, TRITON_) passed names like these."""
    assert name not in child_environment({**STEP, name: "x"})


def test_overrides_are_checked_too():
    env = child_environment(STEP, VIRTUAL_ENV="/tmp/venv", PATH="/tmp/venv/bin:/usr/bin")
    assert env["VIRTUAL_ENV"] == "/tmp/venv" and env["PATH"].startswith("/tmp/venv/bin")
    with pytest.raises(ValueError, match="GITHUB_TOKEN"):
        child_environment(STEP, GITHUB_TOKEN="x")

