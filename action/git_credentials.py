"""Git credentials left in the target's clone, found and removed before the PR's code runs.

``actions/checkout`` keeps the workflow token in the clone's configuration unless
``persist-credentials: false``: up to v5 as ``http.https://github.com/.extraheader`` in
``.git/config``, from v6 in a file under ``RUNNER_TEMP`` that ``.git/config`` includes
(``includeIf.gitdir:…``). Other CI systems put a token in the remote URL
(``https://user:token@host/…``) or configure a credential helper. Code of the pull request
runs as the same user and can read all of those files by path, so hiding them from ``git``
is not enough: they are removed from the files themselves (the token is only needed to fetch
the two commits, which happens before).

:func:`credential_entries` and :func:`include_paths` decide (pure); :func:`strip` edits the
files with ``git config --file`` (thin shell).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from runner.git import run_git

#: Keys that carry a credential or run a program that hands one out.
CREDENTIAL_KEY = re.compile(r"^(http\.(.+\.)?extraheader|credential\..+|core\.askpass)$", re.IGNORECASE)
#: ``scheme://user[:password]@`` in a URL (a token in a remote URL or an ``insteadOf`` rule).
USERINFO = re.compile(r"://[^/@\s]+@")
INCLUDE_KEY = re.compile(r"^include(if\..+)?\.path$", re.IGNORECASE)
#: Seconds one ``git config`` or ``rev-parse`` may take.
TIMEOUT = 60


@dataclass(frozen=True)
class ConfigEntry:
    """One ``key = value`` line of a git configuration file (``key`` as git prints it:
    section and name lower case, subsection as written)."""

    file: str
    key: str
    value: str

    @property
    def fix(self) -> str | None:
        """The value to write instead (a URL without its user information), or None to remove
        the entry."""
        if CREDENTIAL_KEY.match(self.key) or USERINFO.search(self.key):
            return None
        return USERINFO.sub("://", self.value)


def parse_list(text: str, file: str) -> list[ConfigEntry]:
    """Entries of ``git config --file FILE --list -z`` output (``key\\nvalue\\0`` each)."""
    entries = []
    for item in text.split("\0"):
        if not item:
            continue
        key, _, value = item.partition("\n")
        entries.append(ConfigEntry(file, key, value))
    return entries


def credential_entries(entries: list[ConfigEntry]) -> list[ConfigEntry]:
    """The entries that hold or produce a credential (pure): :data:`CREDENTIAL_KEY` keys, and
    any key or value with user information in a URL."""
    return [e for e in entries if CREDENTIAL_KEY.match(e.key) or USERINFO.search(e.key) or USERINFO.search(e.value)]


def include_paths(entries: list[ConfigEntry]) -> list[Path]:
    """Files that ``include.path`` / ``includeIf.<condition>.path`` entries name, whatever the
    condition (pure; relative paths are relative to the including file, ``~`` is the home)."""
    out = []
    for e in entries:
        if INCLUDE_KEY.match(e.key) and e.value:
            path = Path(os.path.expanduser(e.value))
            out.append(path if path.is_absolute() else Path(e.file).parent / path)
    return out


def config_files(repo: Path) -> list[Path]:
    """The clone's own configuration files: ``config`` and ``config.worktree`` of its git
    directory, and every file they include (transitively)."""
    proc = run_git(repo, "rev-parse", "--git-dir", timeout=TIMEOUT)
    if proc.returncode != 0:
        return []
    git_dir = (repo / proc.stdout.strip()).resolve()
    queue = [git_dir / "config", git_dir / "config.worktree"]
    seen: list[Path] = []
    while queue:
        path = queue.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        queue += include_paths(read_entries(path))
    return seen


def read_entries(path: Path) -> list[ConfigEntry]:
    """The entries of one configuration file (includes not followed)."""
    proc = run_git(None, "config", "--file", str(path), "--list", "-z", timeout=TIMEOUT)
    return parse_list(proc.stdout, str(path)) if proc.returncode == 0 else []


def strip(repo: Path) -> list[ConfigEntry]:
    """Remove every credential from the clone's configuration files (see the module's
    docstring). Returns what was removed or rewritten, for a notice (never print ``value``)."""
    removed = []
    for path in config_files(repo):
        for entry in credential_entries(read_entries(path)):
            fixed = entry.fix
            if fixed is None:
                run_git(None, "config", "--file", str(path), "--unset-all", entry.key,
                        timeout=TIMEOUT)
            else:
                run_git(None, "config", "--file", str(path), "--fixed-value", "--replace-all",
                        entry.key, fixed, entry.value, timeout=TIMEOUT)
            removed.append(entry)
    return removed
