"""from_git on a real repository the test makes, and ``perfgate intent`` through runner.cli.main."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runner.cli.main import main
from runner.errors import GitError, UserError
from runner.intent import classify_rules, name_strategy
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


def test_from_git_names_no_strategy_that_no_measured_rule_backs(repo):
    # removing .item() reads as host_sync_elimination to the hand rules, but none of their
    # host-sync rules is right on 90 % of the real PRs it matches: the report names nothing
    result = from_git(repo, "base", "HEAD")
    assert result == {"strategy": "unknown", "confidence": 0.0, "signals": [], "precision": None}
    assert classify_rules(diff="+    n = mask.sum()\n-    n = int(mask.sum().item())\n")


def test_from_git_reads_the_commit_messages_and_pr_text(repo):
    git(repo, "commit", "-q", "--allow-empty", "-m",
        "Softmax: exp2 with log2(e) folded into the scale")
    result = from_git(repo, "base", "HEAD")
    assert result["strategy"] == "math_simplification"
    assert result["precision"]["fired"] >= 10
    assert result["precision"]["right"] >= 0.9 * result["precision"]["fired"]
    right, fired = result["precision"]["right"], result["precision"]["fired"]
    assert result["confidence"] == round(right / fired, 3)
    assert any("exp2" in s for s in result["signals"])
    titled = from_git(repo, "base", "HEAD~1", title="Cut register pressure in the sampler")
    assert titled["strategy"] == "occupancy_control"


def test_from_git_bad_ref_and_bad_repo(repo, tmp_path):
    with pytest.raises(GitError, match="no-such-ref"):
        from_git(repo, "no-such-ref", "HEAD")
    with pytest.raises(GitError, match="not a git repository"):
        from_git(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else tmp_path, "a", "b")
    with pytest.raises(UserError):
        from_git(tmp_path / "missing", "a", "b")


def test_cli_text_json(capsys):
    assert main(["intent", "--title", "Fold the reciprocal into the scale", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "math_simplification"
    assert set(out) == {"strategy", "confidence", "signals", "precision", "rules"}
    assert out["rules"][0]["strategy"] == "math_simplification"


def test_cli_human_output_names_the_strategy_with_its_measured_rule(capsys):
    assert main(["intent", "--title", "Use exp2 instead of exp in the softmax kernel"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("strategy: math_simplification (")
    assert out[1].strip().startswith("named by a rule right on ") and "real pull requests" in out[1]
    assert out[2].strip() == '- matched "exp2"'


def test_cli_human_output_names_nothing_on_the_rules_reading_alone(capsys):
    assert main(["intent", "--title", "Fuse the optimizer step", "--body",
                 "and capture it in a CUDA graph", "--labels", "performance, module: cuda"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("strategy: none named (no rule right on 90% of the real pull requests")
    assert "the hand rules also read: kernel_fusion" in out
    assert "(not named: their rules are right on fewer than 90% of" in out


def test_cli_unknown(capsys):
    assert main(["intent", "--title", "Fix a typo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("strategy: none named") and "also read" not in out


def test_cli_diff_file_and_stdin(tmp_path, capsys, monkeypatch):
    patch = tmp_path / "change.diff"
    patch.write_text("--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-__global__ void k() {\n+__global__ void __launch_bounds__(128) k() {\n")
    expected = {**name_strategy(diff=patch.read_text()),
                "rules": classify_rules(diff=patch.read_text())["candidates"][:3]}
    assert main(["intent", "--diff", str(patch), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(patch.read_text()))
    assert main(["intent", "--diff", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected


def test_cli_from_git(repo, capsys):
    assert main(["intent", "--repo", str(repo), "--base", "base", "--head", "HEAD", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "unknown" and out["rules"][0]["strategy"] == "host_sync_elimination"


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


def test_import_does_not_import_torch():
    code = "import sys, runner.intent; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
