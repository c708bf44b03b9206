"""A generated target repository: two commits, the head one does clearly more work.

``origin/`` holds the history (and serves commits by SHA, as GitHub does); ``checkout/`` is a
one-commit-deep clone at head, as ``actions/checkout`` leaves it, so the base commit is absent
until the action fetches it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

BENCH = '''\
import work


def bench_sum(device):
    return lambda: work.work(3000)
'''

BASE_WORK = '''\
def work(n):
    return sum(i * i for i in range(n))
'''

# Four times the work: a regression far beyond any threshold, on any machine.
HEAD_WORK = '''\
def work(n):
    total = 0
    for _ in range(4):
        total = sum(i * i for i in range(n))
    return total
'''


# Small and quick: CPU, short samples, few rounds, no profiling pass.
CONFIG = """\
device = "cpu"
min_rounds = 4
min_sample_time = 0.002
max_time = 20
profile = false
"""


def git(cwd: Path, *args: str) -> str:
    env_args = ["-c", "user.name=perfgate-test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]
    return subprocess.run(["git", *env_args, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class TargetRepo:
    origin: Path
    checkout: Path
    base_sha: str
    head_sha: str


def probing_files(module: str, function: str) -> dict[str, str]:
    """The base revision of a target whose ``install`` command and benchmark module both call
    ``module.function(where)`` (``where`` = ``"install"`` / ``"benchmark"``) — a no-op at base;
    the head replaces ``module`` with the probe. Small settings: CPU, few rounds, 10 s, no profile."""
    return {
        "work.py": "def work(n):\n    return sum(i * i for i in range(n))\n",
        f"{module}.py": f"def {function}(where):\n    pass\n",
        "benchmarks/bench_work.py": (f"import {module}\nimport work\n\n{module}.{function}(\"benchmark\")\n\n\n"
                                     "def bench_sum(device):\n    return lambda: work.work(300)\n"),
        "perfgate.toml": (f"device = \"cpu\"\ninstall = \"python3 -c 'import {module}; {module}.{function}(\\\"install\\\")'\"\n"
                          "min_rounds = 2\nmax_rounds = 6\npair_rounds = 2\nmin_sample_time = 0.001\nmax_time = 10\n"
                          "profile = false\n"),
    }


def two_commit_repo(origin: Path, checkout: Path, base: dict[str, str], head: dict[str, str]) -> tuple[str, str]:
    """``origin`` with a base commit of the files ``base`` (relative path → text) on ``main`` and
    a head commit on ``feature`` that writes ``head`` over them; ``checkout`` a one-deep clone of
    ``main`` (as actions/checkout leaves the default branch). Returns (base SHA, head SHA)."""
    import shutil

    origin.mkdir(parents=True)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    for files, message in ((base, "base"), (head, "head")):
        if message == "head":
            git(origin, "checkout", "-qb", "feature")
        for name, text in files.items():
            (origin / name).parent.mkdir(parents=True, exist_ok=True)
            (origin / name).write_text(text)
        git(origin, "add", "-A")
        git(origin, "commit", "-qm", message)
    base_sha, head_sha = git(origin, "rev-parse", "main"), git(origin, "rev-parse", "feature")
    git(origin, "checkout", "-q", "main")
    shutil.rmtree(checkout, ignore_errors=True)
    git(origin.parent, "clone", "-q", "--depth=1", origin.as_uri(), str(checkout))
    return base_sha, head_sha


def make_target_repo(root: Path) -> TargetRepo:
    origin = root / "origin"
    (origin / "benchmarks").mkdir(parents=True)
    git(origin, "init", "-q")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    (origin / "benchmarks" / "bench_work.py").write_text(BENCH)
    (origin / "work.py").write_text(BASE_WORK)
    (origin / "perfgate.toml").write_text(CONFIG)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    base_sha = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-qb", "feature")
    (origin / "work.py").write_text(HEAD_WORK)
    git(origin, "commit", "-qam", "faster (not really)")
    head_sha = git(origin, "rev-parse", "HEAD")
    checkout = root / "checkout"
    git(root, "clone", "-q", "--depth=1", "--branch=feature", origin.as_uri(), str(checkout))
    return TargetRepo(origin, checkout, base_sha, head_sha)
