"""``perfgate init [PATH] [--mode app|standalone] [--runs-on LABELS] [--force]``: make a
repository ready for perfgate (the files are decided by :mod:`runner.scaffold.plan`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UserError
from ..scaffold.inspect import inspect_repo
from ..scaffold.plan import (ACTION_REMOTE, ACTION_TAG, BENCHMARK_PATH, CONFIG_PATH,
                             DEFAULT_RUNS_ON, GITIGNORE_PATH, RESULTS_DIR, WORKFLOW_PATH,
                             gitignore_text, pin_command, plan, tag_commit)

NEXT_STEPS = {
    "app": ("commit these files to the default branch; install the perfgate App on the repository "
            "(README: \"Set up\"); label a self-hosted GPU runner {labels}; then label a pull request "
            "`performance`."),
    "standalone": ("commit these files to the default branch; label a self-hosted GPU runner {labels}; "
                   "then Actions → perfgate standalone → Run workflow with the PR number and its two SHAs."),
}


def installed_commit() -> str | None:
    """The commit perfgate was installed from, when pip recorded one (``pip install
    git+https://…``: PEP 610's ``direct_url.json``, ``vcs_info.commit_id``); None otherwise."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution("perfgate").read_text("direct_url.json")
        commit = (json.loads(text or "{}").get("vcs_info") or {}).get("commit_id")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and len(commit) == 40 else None


def tag_commit_now(remote: str | None = None, tag: str = ACTION_TAG,
                   timeout: float = 20) -> str | None:
    """The commit ``tag`` of perfgate's actions names on GitHub now (``git ls-remote``), or None
    (no git, no network, no such tag; never a prompt for credentials)."""
    import os
    import subprocess

    try:
        proc = subprocess.run(["git", "ls-remote", "--tags", "--", remote or ACTION_REMOTE,
                               f"refs/tags/{tag}", f"refs/tags/{tag}^{{}}"], capture_output=True,
                              text=True, timeout=timeout,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return tag_commit(proc.stdout, tag) if proc.returncode == 0 else None


def main_init(args: argparse.Namespace) -> int:
    """Write the planned files that do not exist yet (all of them with ``--force``); print each
    path with what it is, and the next steps. Exit status 0, or 2 for a bad path or label."""
    root = Path(args.path)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory (perfgate init PATH: the target repository)")
    runs_on = (tuple(label.strip() for label in args.runs_on.split(",")) if args.runs_on is not None
               else DEFAULT_RUNS_ON)
    facts = inspect_repo(root, (WORKFLOW_PATH, CONFIG_PATH, BENCHMARK_PATH))
    commit, source = installed_commit(), "the commit this perfgate was installed from"
    if commit is None:  # security review N11: never leave the tag unpinned when it can be found
        commit, source = tag_commit_now(), f"{ACTION_TAG} on GitHub now (git ls-remote): review it"
    files = plan(facts, mode=args.mode, runs_on=runs_on, perfgate_commit=commit)
    for planned in files:
        target = root / planned.path
        if planned.path in facts.existing and not args.force:
            print(f"kept     {planned.path} (exists; --force overwrites it)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(planned.text, encoding="utf-8")
        print(f"wrote    {planned.path}: {planned.why}")
    ignore = root / GITIGNORE_PATH
    updated = gitignore_text(ignore.read_text("utf-8", "replace") if ignore.is_file() else None)
    if updated is not None:
        ignore.write_text(updated, encoding="utf-8")
        print(f"wrote    {GITIGNORE_PATH}: ignores {RESULTS_DIR} (where compare and run write their results)")
    if not (root / ".git").exists():
        print(f"warning: {root} is not a git repository: perfgate compares commits, so `git init` and commit "
              "these files first")
    if facts.pyproject_config:
        print(f"kept     pyproject.toml [tool.perfgate] (a {CONFIG_PATH} would override it)")
    if facts.has_bench_files:
        print("kept     benchmarks/bench_*.py (the existing suite)")
    if commit:
        print(f"pinned   perfgate/perfgate and perfgate/perfgate/comment to {commit} ({source})")
    else:
        print(f"warning: perfgate/perfgate@{ACTION_TAG} is NOT pinned (perfgate was not installed "
              f"from git and git ls-remote {ACTION_REMOTE} did not answer): a tag can be moved to "
              f"other code. Pin it: {pin_command()}, then write @<sha>  # {ACTION_TAG} in "
              f"{WORKFLOW_PATH} (its comment says where)")
    print("next: " + NEXT_STEPS[args.mode].format(labels="[" + ", ".join(runs_on) + "]"))
    return 0
