"""from_git on a real repository the test makes, and ``perfgate intent`` through runner.cli.main."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runner.cli.main import main
from runner.errors import GitError, UserError
from runner.intent import classify
from runner.intent.git import from_git


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)


@pytest.fixture()
def repo(tmp_path):
    path = tmp_path / "target"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "sampler.py").write_text("def step(mask, buf):\n    n = int(mask.sum().item())\n    return buf[:n]\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "initial sampler")
    git(path, "tag", "base")
    (path / "sampler.py").write_text("def step(mask, buf):\n    n = mask.sum()\n    return buf * (n > 0)\n")
    git(path, "commit", "-q", "-am", "Sampler: no .item() per step\n\nThe count stays a tensor.")
    return path


def test_from_git_reads_messages_and_diff(repo):
    result = from_git(repo, "base", "HEAD")
    assert result["strategy"] == "host_sync_elimination"
    assert any("sampler.py" in s and ".item()" in s for s in result["signals"])
    assert any(s.startswith("commits:") for s in result["signals"])


def test_from_git_with_pr_text(repo):
    result = from_git(repo, "base", "HEAD", title="Remove a GPU->CPU sync in the sampler")
    assert result["strategy"] == "host_sync_elimination"
    assert any(s.startswith("title:") for s in result["signals"])


def test_from_git_bad_ref_and_bad_repo(repo, tmp_path):
    with pytest.raises(GitError, match="no-such-ref"):
        from_git(repo, "no-such-ref", "HEAD")
    with pytest.raises(GitError, match="not a git repository"):
        from_git(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else tmp_path, "a", "b")
    with pytest.raises(UserError):
        from_git(tmp_path / "missing", "a", "b")


def test_cli_text_json(capsys):
    assert main(["intent", "--title", "[inductor] Fuse the epilogue into the mm template", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "kernel_fusion"
    assert set(out) == {"strategy", "confidence", "optimisation", "gate_threshold", "answer", "rate", "signals",
                        "cues", "candidates"}


def test_cli_human_output(capsys):
    assert main(["intent", "--title", "Fuse the optimizer step", "--body", "and capture it in a CUDA graph",
                 "--labels", "performance, module: cuda"]) == 0
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first.startswith("answer:       ") and " or " in first or first.startswith("answer:       probably ")
    assert "times in 10 at this confidence on" in second and "held-out pull requests" in second
    assert "1. kernel_fusion" in out and "2. " in out and '- body: "capture it in a cuda graph"' in out


def test_cli_unknown(capsys):
    assert main(["intent", "--title", "Fix a typo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("answer:       unknown (optimisation 0.") and "a strategy is named from 0.50)" in out
    assert "not an optimisation" in out.splitlines()[1] and "if it is one:" in out


def test_cli_diff_file_and_stdin(tmp_path, capsys, monkeypatch):
    patch = tmp_path / "change.diff"
    patch.write_text("--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-__global__ void k() {\n+__global__ void __launch_bounds__(128) k() {\n")
    expected = classify(diff=patch.read_text())
    assert main(["intent", "--diff", str(patch), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(patch.read_text()))
    assert main(["intent", "--diff", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected


def test_cli_from_git(repo, capsys):
    assert main(["intent", "--repo", str(repo), "--base", "base", "--head", "HEAD", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "host_sync_elimination"


@pytest.mark.parametrize("argv_tail", [
    ["--base", "no-such-ref"],
    ["--base", "base", "--head", "nope"],
])
def test_cli_bad_ref_exits_2_with_one_line(repo, capsys, argv_tail):
    assert main(["intent", "--repo", str(repo), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("perfgate: error:") and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["intent"],
    ["intent", "--diff", "/no/such/file.diff"],
    ["intent", "--head", "HEAD"],
])
def test_cli_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    (bytes(range(256)) * 40, "is binary, not a unified diff"),
    (b"just some notes\nabout a change\n", "has no diff header or hunk"),
])
def test_cli_refuses_what_is_not_a_diff(tmp_path, capsys, content, message):
    path = tmp_path / "x.diff"
    path.write_bytes(content)
    assert main(["intent", "--diff", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert main(["intent", "--diff", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_cli_refuses_an_empty_range(repo, capsys):
    assert main(["intent", "--repo", str(repo), "--base", "HEAD", "--head", "HEAD"]) == 2
    assert "no change between --base HEAD and --head HEAD" in capsys.readouterr().err


def test_cli_human_output_shows_the_gate(capsys):
    assert main(["intent", "--title", "Fuse the bias add and GELU into one kernel"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("answer:       probably kernel_fusion\n") and "1. kernel_fusion" in out
    assert "optimisation: " in out and "(probability that the change is one" in out


def test_import_does_not_import_torch():
    code = "import sys, runner.intent; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
