"""Make sure both commits are in the checkout (thin shell over ``git``).

``actions/checkout`` clones one commit deep by default, so base and head are usually absent.
GitHub serves any reachable commit by SHA (``git fetch origin <sha>``), and a fork PR's head
through ``refs/pull/<n>/head``. Shallow commits are enough: compare checks each side out in a
worktree and does not need history between them.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Mapping

from runner.git import run_git

from .environment import ActionInputError

FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
#: Seconds one git command of this step may take (a fetch included; unshallowing takes longer).
TIMEOUT = 300


def auth_environment(server_url: str, token: str | None) -> dict[str, str]:
    """Variables that let one ``git fetch`` authenticate with ``token`` (pure), as
    ``actions/checkout`` does but without writing it to any file: an ``http.<server>/.extraheader``
    given through ``GIT_CONFIG_*``, after an empty one that drops any header already configured
    (GitHub refuses two). Empty without a token."""
    if not token:
        return {}
    key = f"http.{server_url.rstrip('/')}/.extraheader"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": key, "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": key, "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}"}


def _local_commit(repo: Path, ref: str) -> str | None:
    proc = run_git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                   f"{ref}^{{commit}}", timeout=TIMEOUT)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def fetch_candidates(ref: str, pr_number: int | None) -> list[list[str]]:
    """The ``git fetch`` argument lists to try, in order, to bring ``ref`` into the clone (pure).

    A full SHA is fetched by itself (depth 1, no tags), then, for a PR, through its head ref;
    a name (branch or tag) is fetched from origin as is.
    """
    base = ["fetch", "--no-tags", "--quiet", "--depth=1", "--end-of-options", "origin"]
    if FULL_SHA.fullmatch(ref):
        tries = [base + [ref]]
        if pr_number:
            tries.append(base + [f"+refs/pull/{pr_number}/head"])
        return tries
    return [base + [ref]]


def ensure_commit(repo: Path, ref: str, pr_number: int | None = None, auth: Mapping[str, str] | None = None) -> str:
    """The full SHA of ``ref`` in ``repo``, fetching it from ``origin`` first when absent
    (``auth``: :func:`auth_environment` for the fetch).

    Raises:
        ActionInputError: ``repo`` is not a git checkout, or ``ref`` is neither there nor on origin.
    """
    if run_git(repo, "rev-parse", "--git-dir", timeout=TIMEOUT).returncode != 0:
        raise ActionInputError(f"{repo} is not a git checkout: run actions/checkout before the perfgate action")
    sha = _local_commit(repo, ref)
    if sha:
        return sha
    errors = []
    for args in fetch_candidates(ref, pr_number):
        proc = run_git(repo, *args, timeout=TIMEOUT, env=auth)
        if proc.returncode == 0:
            sha = _local_commit(repo, ref) or (_local_commit(repo, "FETCH_HEAD") if not FULL_SHA.fullmatch(ref) else None)
            if sha:
                return sha
        else:
            errors.append(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"git {' '.join(args)} failed")
    detail = f" ({errors[0]})" if errors else ""
    raise ActionInputError(f"commit {ref} is not in the checkout and could not be fetched from origin{detail}; "
                           "check the base/head SHAs or use actions/checkout with fetch-depth: 0")


def file_at(repo: Path, sha: str, path: str) -> bytes | None:
    """The content of ``path`` at commit ``sha`` (None when the commit has no such file)."""
    proc = run_git(repo, "show", f"{sha}:{path}", timeout=60, text=False)
    return proc.stdout if proc.returncode == 0 else None


def fetch_history(repo: Path, bad: str, auth: Mapping[str, str] | None = None) -> None:
    """Make the clone hold the whole history of ``bad`` (``perfgate bisect`` walks the first-parent
    line from good to it): unshallow a shallow clone, fetching ``bad`` with its ancestors.

    Raises:
        ActionInputError: the history could not be fetched.
    """
    shallow = (run_git(repo, "rev-parse", "--is-shallow-repository", timeout=TIMEOUT).stdout.strip()
               == "true")
    if not shallow:
        return
    args = ["fetch", "--no-tags", "--quiet", "--unshallow", "--end-of-options", "origin", bad]
    proc = run_git(repo, *args, timeout=1800, env=auth)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "git fetch failed"
        raise ActionInputError(f"the history of {bad[:12]} could not be fetched for the bisect ({last}); use "
                               "actions/checkout with fetch-depth: 0")
