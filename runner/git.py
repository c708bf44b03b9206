"""git, the command: run it, find a repository's root, resolve a ref to a SHA (the thin shell every
part of the engine that reads a repository uses: the pipeline's worktrees, intent's diff, the
demo's repository; the Action's fetches and credential clean-up run git through :func:`run_git`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping

from .errors import GitError

#: Seconds one git command may take before it is abandoned.
GIT_TIMEOUT = 120.0


def run_git(repo: str | Path | None, *args: str, timeout: float = GIT_TIMEOUT,
            env: Mapping[str, str] | None = None, text: bool = True,
            errors: str | None = None) -> subprocess.CompletedProcess:
    """Run ``git -C repo ARGS`` (``git ARGS`` without ``repo``) with its output captured, as text
    (``errors`` as :func:`open` takes it) unless not ``text``, and ``env`` laid over this process's
    environment; the finished process whatever its exit status.

    Raises:
        FileNotFoundError: git is missing.
        subprocess.TimeoutExpired: it took longer than ``timeout``.
    """
    argv = ["git", *(["-C", str(repo)] if repo is not None else []), *args]
    return subprocess.run(argv, capture_output=True, text=text, errors=errors if text else None,
                          timeout=timeout, env=None if env is None else {**os.environ, **env})


def git(repo: str | Path, *args: str, check: bool = True, strip: bool = True) -> str:
    """Run ``git -C repo ARGS`` and return its standard output (stripped unless ``strip`` is False;
    undecodable bytes replaced).

    Raises:
        GitError: git is missing, took longer than :data:`GIT_TIMEOUT`, or failed (with ``check``);
            the message carries git's own last error line.
    """
    try:
        proc = run_git(repo, *args, errors="replace")
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0] if args else ''} in {repo} took longer than {GIT_TIMEOUT:.0f} s") from None
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GitError(f"git {' '.join(args[:2])} failed in {repo}: {last}")
    return proc.stdout.strip() if strip else proc.stdout


def repo_root(path: str | Path) -> Path:
    """The top-level folder of the git repository containing ``path``.

    Raises:
        GitError: ``path`` does not exist or is not inside a git repository.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise GitError(f"--repo {path}: no such directory")
    try:
        return Path(git(p, "rev-parse", "--show-toplevel"))
    except GitError:
        raise GitError(f"--repo {path}: not a git repository") from None


def resolve(repo: str | Path, ref: str) -> str:
    """The full commit SHA that ``ref`` names in ``repo``.

    Raises:
        GitError: naming the ref when it does not resolve to a commit.
    """
    sha = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False)
    if not sha:
        raise GitError(f"unknown ref {ref!r} in {repo} (fetch it, or check the branch/SHA name)")
    return sha


def commit_time(repo: str | Path, sha: str) -> str | None:
    """The committer date of ``sha`` in ``repo``, ISO 8601 with its offset (``%cI``); None where
    git cannot say. History orders a series by it (commit order), not by when it was measured:
    a parent measured after its child drew a false slowdown (issue 47)."""
    try:
        return git(repo, "show", "-s", "--format=%cI", sha, check=False) or None
    except GitError:
        return None
