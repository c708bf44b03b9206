"""Read a change from git: the commit messages and the diff between two refs (the I/O shell)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import GitError
from ..git import git
from .precise import name_strategy


def _resolve(repo: Path, ref: str, side: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except GitError:
        raise GitError(f"--{side} {ref!r} is not a commit in {repo} (try a branch, tag or SHA that `git log` shows)") from None


def read_change(repo: str | Path, base: str, head: str) -> tuple[list[str], str]:
    """Commit messages of ``base..head`` (newest first) and ``git diff base head``.

    Raises:
        GitError: ``repo`` is not a git work tree, or ``base`` / ``head`` is not a commit.
    """
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise GitError(f"--repo {str(repo)!r} is not a directory")
    try:
        git(path, "rev-parse", "--git-dir")
    except GitError:
        raise GitError(f"--repo {str(repo)!r} is not a git repository") from None
    base_sha = _resolve(path, base, "base")
    head_sha = _resolve(path, head, "head")
    log = git(path, "log", "--no-color", "--format=%B%x00", "--end-of-options", f"{base_sha}..{head_sha}", strip=False)
    messages = [m.strip() for m in log.split("\x00") if m.strip()]
    diff = git(path, "diff", "--no-color", "--no-ext-diff", "-M", "--end-of-options", base_sha, head_sha, strip=False)
    return messages, diff


def from_git(repo: str | Path, base: str, head: str, *, title: str = "", body: str = "",
             labels: Iterable[str] = ()) -> dict:
    """The strategy (:func:`.precise.name_strategy`) of the change between two refs.

    Args:
        repo: path of the git repository (any directory inside its work tree).
        base, head: refs (branch, tag, SHA); the commits ``base..head`` and the diff
            ``base head`` are read.
        title, body, labels: the PR's, when one is known; they are read together with the
            commit messages.

    Returns:
        what ``name_strategy`` returns.

    Raises:
        GitError: a bad repository or ref, with a message naming it.
    """
    messages, diff = read_change(repo, base, head)
    return name_strategy(title=title, body=body, labels=labels, commit_messages=messages,
                         diff=diff)
