"""The compare command line (pure) and fetching the commits into a shallow checkout (real git)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from action.compare import CompareOutcome, compare_argv, run_compare
from action.environment import ActionInputError, Plan
from action.git_shas import ensure_commit, fetch_candidates
from tests.action.target_repo import make_target_repo
from tests.runner.test_child_env import STEP as CHILD_STEP

SHA_A, SHA_B = "a" * 40, "b" * 40


def _plan(**kw) -> Plan:
    return Plan(event_name="pull_request", repository="o/r", workspace=Path("/ws"), base_ref=SHA_A, head_ref=SHA_B,
                out_dir=Path("/out"), **kw)


def test_compare_argv_minimal_leaves_defaults_to_compare():
    argv = compare_argv(_plan(), SHA_A, SHA_B, python="py")
    assert argv == ["py", "-m", "runner.cli", "compare", "--repo=/ws", f"--base={SHA_A}", f"--head={SHA_B}",
                    "--out=/out", "--quiet", "--no-reports"]


def test_compare_argv_carries_every_setting():
    argv = compare_argv(_plan(config=Path("/ws/ci/perfgate.toml"), benchmarks="bench", filter="norm*", device="cuda",
                              threshold=0.03, max_time=60.0, profile=False, fail_on_regression=True, title="T",
                              body="B", labels=("performance", "fusion")), SHA_A, SHA_B, python="py")
    for part in ("--config=/ws/ci/perfgate.toml", "--benchmarks=bench", "--filter=norm*", "--device=cuda",
                 "--threshold=0.03", "--max-time=60.0", "--no-profile", "--fail-on-regression", "--title=T",
                 "--body=B", "--labels=performance,fusion"):
        assert part in argv


def test_compare_argv_all_benchmarks_turns_selection_off():
    from runner.cli.main import build_parser

    argv = compare_argv(_plan(all_benchmarks=True), SHA_A, SHA_B, python="py")
    assert "--all" in argv and build_parser().parse_args(argv[3:]).affected is False
    assert "--all" not in compare_argv(_plan(), SHA_A, SHA_B, python="py")


def test_force_run_names_each_become_one_option():
    from action.environment import parse_names
    from runner.cli.main import build_parser

    names = parse_names('["bench_a[n=1, m=2]", "bench_b"]', "force-run")
    argv = compare_argv(_plan(force_run=names), SHA_A, SHA_B, python="py")
    assert build_parser().parse_args(argv[3:]).force_run == ["bench_a[n=1, m=2]", "bench_b"]
    for bad in ("bench_a", "[1]", "[\"\"]"):
        with pytest.raises(ActionInputError, match="force-run"):
            parse_names(bad, "force-run")


def test_run_compare_keeps_the_stderr_tail_and_status(tmp_path):
    code = "import sys; print('progress', file=sys.stderr); print('perfgate: error: no benchmarks', file=sys.stderr); sys.exit(2)"
    outcome = run_compare([sys.executable, "-c", code], tmp_path)
    assert outcome == CompareOutcome(2, ("progress", "perfgate: error: no benchmarks"), tmp_path / "results.json")
    assert outcome.last_error_line == "perfgate: error: no benchmarks"


def test_fetch_candidates():
    assert fetch_candidates(SHA_A, 4)[-1][-1] == "+refs/pull/4/head"
    assert len(fetch_candidates(SHA_A, None)) == 1
    assert fetch_candidates("main", 4)[0][-1] == "main"


def test_ensure_commit_fetches_into_a_shallow_clone(tmp_path):
    target = make_target_repo(tmp_path)
    assert ensure_commit(target.checkout, target.head_sha) == target.head_sha  # already there
    auth = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
            "GIT_CONFIG_VALUE_0": "", "GIT_CONFIG_KEY_1": "http.https://github.com/.extraheader",
            "GIT_CONFIG_VALUE_1": "AUTHORIZATION: basic eA=="}
    assert ensure_commit(target.checkout, target.base_sha, 3, auth) == target.base_sha  # fetched by SHA
    assert "extraheader" not in (target.checkout / ".git" / "config").read_text()  # never written down
    assert ensure_commit(target.checkout, "main") == target.base_sha  # a branch name, fetched from origin
    with pytest.raises(ActionInputError, match=f"commit {'f' * 40} is not in the checkout"):
        ensure_commit(target.checkout, "f" * 40)
    with pytest.raises(ActionInputError, match="not a git checkout"):
        ensure_commit(tmp_path, "HEAD")


def test_the_compare_phases_own_environment_is_a_fixed_point():
    """``python -m action compare`` re-executes itself until its environment is clean: one step."""
    from action.__main__ import compare_environment

    once = compare_environment({**CHILD_STEP, "GITHUB_EVENT_PATH": "/tmp/event.json", "RUNNER_TEMP": "/tmp/r"})
    assert compare_environment(once) == once
    assert "INPUT_GITHUB_TOKEN" not in once and once["INPUT_FILTER"] == "sum" and once["RUNNER_TEMP"] == "/tmp/r"
    assert not {k for k in once if k.startswith("GIT_")}  # perfgate's own git calls keep the user's settings


def test_fetch_authentication_lives_in_the_environment_only():
    from action.git_shas import auth_environment

    assert auth_environment("https://github.com", None) == {}
    env = auth_environment("https://ghe.example/", "ghs_abc")
    assert env["GIT_CONFIG_KEY_0"] == env["GIT_CONFIG_KEY_1"] == "http.https://ghe.example/.extraheader"
    assert env["GIT_CONFIG_VALUE_0"] == ""  # drops any header configured already (GitHub refuses two)
    assert env["GIT_CONFIG_VALUE_1"] == "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX2FiYw=="


@pytest.mark.parametrize("title", ["-O3", "--Fix-everything", "- fix stuff", "--title", "--body=x"])
def test_a_pr_title_that_looks_like_an_option_is_the_title(title):
    from runner.cli.main import build_parser

    argv = compare_argv(_plan(title=title, body="--labels", labels=("-x",)), SHA_A, SHA_B, python="py")
    args = build_parser().parse_args(argv[3:])
    assert (args.title, args.body, args.labels) == (title, "--labels", "-x")


def test_a_ref_that_looks_like_an_option_is_a_ref(tmp_path):
    target = make_target_repo(tmp_path)
    marker = tmp_path / "pwned"
    for ref in (f"--upload-pack=touch {marker}", f"--output={marker}"):
        with pytest.raises(ActionInputError, match="could not be fetched"):
            ensure_commit(target.checkout, ref)
    assert not marker.exists()


def test_a_bisect_run_runs_perfgate_bisect_for_the_benchmark_it_names():
    argv = compare_argv(_plan(bisect=True, filter="bench_norm[rows=4096]", config=Path("/ws/ci/perfgate.toml"),
                              max_time=600.0, title="T"), SHA_A, SHA_B, python="py")
    assert argv[:9] == ["py", "-m", "runner.cli", "bisect", "--repo=/ws", f"--good={SHA_A}", f"--bad={SHA_B}",
                        "--out=/out", "--quiet"]
    assert "--benchmark=bench_norm[rows=4096]" in argv and "--config=/ws/ci/perfgate.toml" in argv
    assert "--max-time=600.0" in argv and not any(a.startswith(("--title", "--filter")) for a in argv)


def test_a_bisect_fetches_the_history_a_shallow_clone_lacks(tmp_path):
    import subprocess

    from action.git_shas import fetch_history
    from testkit.gitrepo import git

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    for i in range(4):
        (origin / "f").write_text(str(i))
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", f"c{i}")
    bad = git(origin, "rev-parse", "HEAD")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{origin}", str(clone)], check=True)
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    fetch_history(clone, bad)
    assert git(clone, "rev-parse", "--is-shallow-repository") == "false"
    assert git(clone, "rev-list", "--count", bad) == "4"
    fetch_history(clone, bad)  # a full clone: nothing to do


def test_what_the_compare_prints_reaches_the_log_inert_and_before_commands_are_back_on(tmp_path, capfd):
    """Red team: a last line without a line break (read by the runner only at the end of the
    stream, after the resume token), the runner's older ``##[`` syntax, one enormous line."""
    import re
    import sys

    from action.compare import MAX_LINE, run_compare

    child = ("import sys\n"
             "sys.stdout.write('##[add-mask]perfgate\\n' + 'y' * 100000 + '\\n::set-output name=verdict::improvement')\n"
             "sys.stdout.flush()\n"
             "sys.stderr.write('perfgate: error: x\\n::add-mask::perfgate')\n")
    outcome = run_compare([sys.executable, "-c", child], tmp_path, env={"PATH": "/usr/bin:/bin"})
    out, err = capfd.readouterr()
    start = re.search(r"^::stop-commands::([0-9a-f]{32})$", out, re.M)
    assert start, out[:200]
    resume = out.index(f"::{start.group(1)}::")
    assert "::set-output name=verdict::improvement\n" in out[:resume]  # echoed, ended, while commands are off
    assert out[resume - 2:resume] == "\n\n" and err.endswith("::add-mask::perfgate\n\n")
    assert "##[" not in out and all(len(line.encode()) <= MAX_LINE for line in out.splitlines())
    assert outcome.last_error_line == "::add-mask::perfgate" and outcome.status == 0
