"""Finding and removing the git credentials a CI checkout leaves in the clone (security review F1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from action.git_credentials import ConfigEntry, credential_entries, include_paths, parse_list, strip
from tests.action.target_repo import git


def test_credentials_are_recognised_by_key_and_by_user_information():
    entries = [ConfigEntry("c", "http.https://github.com/.extraheader", "AUTHORIZATION: basic eA=="),
               ConfigEntry("c", "http.extraheader", "X"),
               ConfigEntry("c", "credential.helper", "store"),
               ConfigEntry("c", "credential.https://github.com.username", "x-access-token"),
               ConfigEntry("c", "remote.origin.url", "https://gitlab-ci-token:glcbt-1@gitlab.com/o/r.git"),
               ConfigEntry("c", "url.https://x:tok@github.com/.insteadof", "https://github.com/"),
               ConfigEntry("c", "remote.origin.url", "https://github.com/o/r"),
               ConfigEntry("c", "core.bare", "false"),
               ConfigEntry("c", "user.email", "someone@example.com")]
    found = credential_entries(entries)
    assert [e.key for e in found] == ["http.https://github.com/.extraheader", "http.extraheader", "credential.helper",
                                      "credential.https://github.com.username", "remote.origin.url",
                                      "url.https://x:tok@github.com/.insteadof"]
    assert found[4].fix == "https://gitlab.com/o/r.git" and found[0].fix is None and found[5].fix is None


def test_parse_list_and_include_paths(tmp_path):
    text = "core.bare\nfalse\0include.path\n../creds.config\0includeif.gitdir:/w/.git/.path\n/tmp/c2\0"
    entries = parse_list(text, str(tmp_path / "repo" / ".git" / "config"))
    assert [e.key for e in entries] == ["core.bare", "include.path", "includeif.gitdir:/w/.git/.path"]
    assert include_paths(entries) == [tmp_path / "repo" / ".git" / ".." / "creds.config", Path("/tmp/c2")]


def test_strip_removes_them_from_the_clone_and_its_included_files(tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    git(repo, "init", "-q")
    included = tmp_path / "runner-temp" / "git-credentials.config"
    included.parent.mkdir()
    included.write_text('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic SECRET2\n')
    git(repo, "config", "--local", "http.https://github.com/.extraheader", "AUTHORIZATION: basic SECRET1")
    git(repo, "config", "--local", "remote.origin.url", "https://x-access-token:SECRET3@github.com/o/r")
    git(repo, "config", "--local", f"includeIf.gitdir:{tmp_path}/nowhere/.path", str(included))
    git(repo, "config", "--local", "user.name", "kept")

    removed = strip(repo)
    assert sorted(e.key for e in removed) == ["http.https://github.com/.extraheader"] * 2 + ["remote.origin.url"]
    text = (repo / ".git" / "config").read_text() + included.read_text()
    assert "SECRET" not in text
    assert git(repo, "config", "remote.origin.url") == "https://github.com/o/r"
    assert git(repo, "config", "--local", "--get", "user.name") == "kept"
    assert strip(repo) == []
    assert subprocess.run(["git", "-C", str(repo), "status"], capture_output=True).returncode == 0
