"""Small git repositories, made with real git: files written, committed as a fixed committer
(no signing), one branch a side."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS`` as the committer ``t``; its standard output, stripped.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    argv = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
            "-c", "commit.gpgsign=false", *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Write ``files`` (path relative to ``root`` → content) under ``root``: text dedented, bytes
    as they are (a built program: executable)."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
            path.chmod(0o755)
        else:
            path.write_text(textwrap.dedent(text))


def commit(root: Path, files: dict[str, str | bytes], message: str) -> str:
    """Write ``files`` under the repository ``root`` and commit everything there; the new SHA."""
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def history(root: Path, commits: list[tuple[dict[str, str | bytes], str]],
            branch: str = "main") -> list[str]:
    """A repo whose ``branch`` holds ``commits`` in order, oldest first: ``(files, message)``,
    each commit's files written on top of the one before; their SHAs."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    return [commit(root, files, message) for files, message in commits]


def make_repo(root: Path, base: dict[str, str | bytes], head: dict[str, str | bytes],
              delete: tuple[str, ...] = ()) -> Path:
    """A repo with branch ``base`` (files ``base``, and whatever ``root`` already holds) and branch
    ``head`` (``base`` + ``head``, minus ``delete``)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "base")
    commit(root, base, "base")
    git(root, "checkout", "-q", "-b", "head")
    write(root, head)
    for rel in delete:
        (root / rel).unlink()
    commit(root, {}, "head: change the work")
    return root
