"""evaluation/harvest_prs.py: merged pull requests read from a real git history, the mechanical
diff excerpt, and the candidates it writes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"


@pytest.fixture(scope="module")
def harvest():
    if str(EVALUATION) not in sys.path:
        sys.path.insert(0, str(EVALUATION))
    spec = importlib.util.spec_from_file_location("harvest_prs", EVALUATION / "harvest_prs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(path: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.com", "PATH": "/usr/bin:/bin", "HOME": str(path)}
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True, env=env).stdout


def commit(path: Path, name: str, text: str, message: str) -> None:
    (path / name).parent.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, "csrc/k.cu", "__global__ void k() {}\n", "initial")
    commit(path, "csrc/k.cu", "__global__ void __launch_bounds__(256) k() {}\n",
           "Speed up k with launch bounds (#12)\n\nFewer registers.\n\nSigned-off-by: a <a@example.com>")
    commit(path, "docs/k.md", "k\n", "Document k (#13)")
    commit(path, "src/ggml-cuda/s.cu", "// faster\n", "CUDA: faster softmax (llama/4321)")
    git(path, "checkout", "-q", "-b", "feature")
    commit(path, "lib/v.py", "x = load_vectorized(p)\n", "vectorize")
    git(path, "checkout", "-q", "main")
    git(path, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #14 from a/feature\n\nAdd a loader option")
    return path


def test_merged_prs_reads_squash_and_merge_commits(harvest, repo):
    prs = {p["number"]: p for p in harvest.merged_prs(str(repo / ".git"))}
    assert set(prs) == {12, 13, 14}
    assert prs[12]["title"] == "Speed up k with launch bounds"
    assert prs[12]["message"] == "Fewer registers."           # trailers and e-mail lines dropped
    assert prs[14]["title"] == "Add a loader option"
    synced = harvest.merged_prs(str(repo / ".git"), synced="llama")
    assert [(p["number"], p["title"]) for p in synced] == [(4321, "CUDA: faster softmax")]


def test_excerpt_puts_library_code_first_and_stops_at_60_lines(harvest):
    test_file = "diff --git a/tests/test_k.py b/tests/test_k.py\n@@ -1 +1 @@ def f\n-old\n+new\n"
    library = ("diff --git a/csrc/k.cu b/csrc/k.cu\n@@ -1,2 +1,2 @@\n-a\n+b  # TODO(somebody) later\n"
               "+mail me at x@example.com\n")
    long = "diff --git a/lib/big.py b/lib/big.py\n@@ -0,0 +1,90 @@\n" + "".join(f"+line {i}\n" for i in range(90))
    out = harvest.excerpt(test_file + library).splitlines()
    assert out[0] == "diff --git a/csrc/k.cu b/csrc/k.cu" and "diff --git a/tests/test_k.py b/tests/test_k.py" in out
    assert "+b  # TODO later" in out and not any("example.com" in line for line in out)
    assert "@@ -1,1 +1,1 @@" in out                            # hunk header: the lines it keeps, no context text
    cut = harvest.excerpt(long + test_file).splitlines()
    assert sum(line.startswith(("+", "-")) for line in cut) == harvest.MAX_LINES
    assert not any("tests/test_k.py" in line for line in cut)  # the excerpt is full after the first file
    wide = harvest.excerpt("diff --git a/a.py b/a.py\n@@ -1 +1 @@\n+" + "x" * 500 + "\n").splitlines()
    assert len(wide[-1]) == harvest.MAX_CHARS


def test_main_writes_candidates_and_strict_keeps_speed_titles(harvest, repo, tmp_path):
    out = tmp_path / "cand.jsonl"
    assert harvest.main(["--git", str(repo / ".git"), "--repo", "o/r", "--out", str(out), "--strict"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["source"] for r in rows] == ["o/r#12"]           # "Document k" and "Add a loader option" are not
    row = rows[0]
    assert row["url"] == "https://github.com/o/r/pull/12" and row["files"] == ["csrc/k.cu"]
    assert "+__global__ void __launch_bounds__(256) k() {}" in row["diff"]
    again = tmp_path / "again.jsonl"
    harvest.main(["--git", str(repo / ".git"), "--repo", "o/r", "--out", str(again), "--strict", "--skip", str(out)])
    assert again.read_text() == ""                            # sources already drawn are skipped
    llama = tmp_path / "llama.jsonl"
    harvest.main(["--git", str(repo / ".git"), "--repo", "o/ggml", "--synced", "ggml-org/llama.cpp=llama",
                  "--out", str(llama)])
    assert [json.loads(line)["source"] for line in llama.read_text().splitlines()] == ["ggml-org/llama.cpp#4321"]
