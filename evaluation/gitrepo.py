"""git for the evaluation scripts: run a command in a generated repository with a fixed
committer identity and no signing (the scripts import it as ``from gitrepo import git``; their
own folder is first on ``sys.path``)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS`` as the evaluation's committer; its standard output.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=eval", "-c", "user.email=eval@example.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout
