"""``action.__main__.main`` in-process against the fake GitHub and a generated git repository,
with the compare subprocess replaced by a canned results.json (the real pipeline runs in
test_action_subprocess.py; the sandbox in test_sandbox_routes.py). Covers publishing (summary
and outputs, no token), the separate comment job (sticky comment created then updated, refused
tokens), dispatched runs and bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import action.compare as compare_mod
from action.__main__ import main
from runner import results as results_mod
from runner.report import MARKER
from tests.action.events import pull_request_labeled, workflow_dispatch
from tests.action.harness import actions_env, read_outputs
from testkit.results_doc import bench, results_doc
from tests.action.target_repo import make_target_repo

REPO = "octo/demo"


@pytest.fixture(autouse=True)
def no_pacing(monkeypatch):
    """PyGithub sleeps 0.25 s between requests and 1 s between writes; not against the fake."""
    from action import github_gateway

    monkeypatch.setitem(github_gateway.CLIENT_OPTIONS, "seconds_between_requests", 0)
    monkeypatch.setitem(github_gateway.CLIENT_OPTIONS, "seconds_between_writes", 0)


@pytest.fixture(autouse=True)
def sandbox_probe(monkeypatch):
    """These tests replace the compare itself, so bubblewrap never runs; where it is not
    installed its probe is replaced too (the sandboxed runs are test_sandbox*.py's)."""
    import shutil

    from runner.sandbox import bubblewrap as sandbox

    if shutil.which("bwrap") is None:
        monkeypatch.setattr(sandbox, "probe", lambda *a, **k: None)


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    return make_target_repo(tmp_path_factory.mktemp("target"))


class CannedCompare:
    """Stands in for ``perfgate compare``: writes results.json, remembers the command line."""

    def __init__(self, status: int = 0, stderr: tuple[str, ...] = (), stopped: str | None = None):
        self.status, self.stderr, self.argvs = status, stderr, []
        self.stopped, self.timeouts = stopped, []

    def __call__(self, argv, out_dir, timeout=None, env=None, preexec=None, **_):
        self.argvs.append(argv)
        self.timeouts.append(timeout)
        options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
        base, head = options["base"], options["head"]
        if self.status in (0, 1):
            doc = results_doc([bench("bench_sum", "regression", 4.0), bench("bench_ok", "unchanged", 1.0)],
                              base_sha=base, head_sha=head)
            results_mod.dump(doc, Path(out_dir) / "results.json")
        return compare_mod.CompareOutcome(self.status, self.stderr, Path(out_dir) / "results.json",
                                          self.stopped)


@pytest.fixture
def canned(monkeypatch):
    fake = CannedCompare()
    monkeypatch.setattr(compare_mod, "run_compare", fake)
    return fake


def _pr_env(tmp, fake_github, target, *, number=12, head_repo=None, token="ghs_write", **inputs):
    fake_github.state.add_pull(REPO, number, head_sha=target.head_sha, base_sha=target.base_sha,
                               head_repo=head_repo, labels=["performance"])
    event = pull_request_labeled(number=number, base_sha=target.base_sha, head_sha=target.head_sha,
                                 head_repo=head_repo)
    return actions_env(tmp, api_url=fake_github.url, workspace=target.checkout, event_name="pull_request",
                       event=event, github_token=token, **inputs)


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::error")]


def _comment_env(tmp: Path, fake_github, results: Path, *, number=12, token="ghs_write") -> dict[str, str]:
    """The comment job's step: a GitHub-hosted runner with the downloaded artifact in ``results``."""
    env = actions_env(tmp, api_url=fake_github.url, workspace=tmp, event_name="workflow_dispatch", event=None,
                      results=str(results), pr_number=str(number), github_token=token)
    env.pop("PERFGATE_OUT_DIR")
    return env


def test_publish_writes_summary_and_outputs_and_comments_nowhere(tmp_path, fake_github, target, canned, capsys):
    fake_github.state.add_token("ghs_write")
    env = _pr_env(tmp_path / "run1", fake_github, target)
    assert main(env) == 0
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "bench_sum" in summary and "regression" in summary
    outputs = read_outputs(Path(env["GITHUB_OUTPUT"]))
    assert outputs["verdict"] == "regression" and outputs["regressions"] == "1" and outputs["improvements"] == "0"
    doc = results_mod.load(outputs["results"])
    assert doc["pull_request"] == {"number": 12, "url": f"https://github.com/{REPO}/pull/12"}
    assert doc["run_url"] == f"https://github.com/{REPO}/actions/runs/4242"
    assert doc["base"] == {"ref": "main", "sha": target.base_sha} and doc["head"]["ref"] == "feature"
    assert Path(outputs["report"]).read_text().startswith(MARKER)
    # the base commit was absent from the shallow checkout: the action fetched it
    argv = canned.argvs[0]
    assert f"--base={target.base_sha}" in argv and f"--head={target.head_sha}" in argv
    assert "--labels=performance" in argv and any(a.startswith("--title=") for a in argv)
    # it ran in bubblewrap, with its own results folder
    # (through the shell that opens its seccomp program for it, where there is one for this machine)
    assert any(a.endswith("bwrap") for a in argv[:5]) and "--unshare-pid" in argv
    assert f"--out={env['PERFGATE_OUT_DIR']}" not in argv and any(a.startswith("--out=") for a in argv)
    # nothing wrote to GitHub
    assert [r for r in fake_github.requests if r.method != "GET"] == []
    assert not _errors(capsys.readouterr().out)


def test_the_comment_job_creates_the_sticky_comment_once_then_updates_it(tmp_path, fake_github, target, canned,
                                                                           capsys):
    fake_github.state.add_token("ghs_write")
    env = _pr_env(tmp_path / "run1", fake_github, target)
    assert main(env) == 0
    artifact = Path(env["PERFGATE_OUT_DIR"])
    assert main(_comment_env(tmp_path / "comment1", fake_github, artifact), ["comment"]) == 0
    comments = fake_github.state.issue_comments(REPO, 12)
    assert len(comments) == 1 and comments[0].body.startswith(MARKER) and "bench_sum" in comments[0].body
    assert comments[0].login == "github-actions[bot]"
    assert f"actions/runs/4242" in comments[0].body  # the details link of the GPU job's run
    assert main(_comment_env(tmp_path / "comment2", fake_github, artifact), ["comment"]) == 0
    assert [c.id for c in fake_github.state.issue_comments(REPO, 12)] == [comments[0].id]
    assert len(fake_github.calls("issues/create-comment")) == 1
    assert len(fake_github.calls("issues/update-comment")) == 1
    assert not _errors(capsys.readouterr().out)


def test_a_humans_comment_with_the_marker_is_left_alone(tmp_path, fake_github, target, canned):
    fake_github.state.add_token("ghs_write")
    env = _pr_env(tmp_path, fake_github, target)
    human = fake_github.state.create_comment(REPO, 12, f"{MARKER} copied from the bot", "octocat", "User")
    assert main(env) == 0
    assert main(_comment_env(tmp_path / "comment", fake_github, Path(env["PERFGATE_OUT_DIR"])), ["comment"]) == 0
    comments = fake_github.state.issue_comments(REPO, 12)
    assert len(comments) == 2 and comments[0].id == human.id and comments[0].body == f"{MARKER} copied from the bot"


def test_the_comment_job_refuses_a_forged_artifact(tmp_path, fake_github, capsys):
    """The artifact is the PR's output: a results.json that is not a valid document is refused
    in one line, and nothing is commented."""
    fake_github.state.add_token("ghs_write")
    fake_github.state.add_pull(REPO, 12, head_sha="a" * 40, base_sha="b" * 40)
    forged = tmp_path / "artifact"
    forged.mkdir()
    (forged / "results.json").write_text(json.dumps({"schema_version": 1, "benchmarks": "<script>"}))
    assert main(_comment_env(tmp_path / "c", fake_github, forged), ["comment"]) == 2
    captured = capsys.readouterr()
    assert len(_errors(captured.out)) == 1 and "Traceback" not in captured.out + captured.err
    assert fake_github.calls("issues/create-comment") == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(_comment_env(tmp_path / "c2", fake_github, empty), ["comment"]) == 2
    assert "no results.json" in _errors(capsys.readouterr().out)[0]


def test_workflow_dispatch_from_the_app(tmp_path, fake_github, target, canned):
    fake_github.state.add_pull(REPO, 7, head_sha=target.head_sha, base_sha=target.base_sha,
                               title="Fuse kernels", body="fewer launches", labels=["performance"])
    event = workflow_dispatch(base_sha=target.base_sha, head_sha=target.head_sha, pr_number=7, run_id="pg-99")
    env = actions_env(tmp_path, api_url=fake_github.url, workspace=target.checkout, event_name="workflow_dispatch",
                      event=event, github_token="ghs_any", comment="false")
    assert main(env) == 0
    doc = json.loads(Path(read_outputs(Path(env["GITHUB_OUTPUT"]))["results"]).read_text())
    assert doc["run_id"] == "pg-99" and doc["pull_request"]["number"] == 7
    argv = canned.argvs[0]
    assert "--title=Fuse kernels" in argv and "--body=fewer launches" in argv
    assert fake_github.calls("issues/create-comment") == [] and fake_github.calls("issues/list-comments") == []


def test_a_comment_token_without_permission_is_a_clear_error(tmp_path, fake_github, target, canned, capsys):
    fake_github.state.add_token("ghs_read", read_only=True)
    env = _pr_env(tmp_path, fake_github, target, token="ghs_read")
    assert main(env) == 0  # the GPU job needs no write permission at all
    assert main(_comment_env(tmp_path / "c", fake_github, Path(env["PERFGATE_OUT_DIR"]), token="ghs_read"),
                ["comment"]) == 2
    captured = capsys.readouterr()
    errors = _errors(captured.out)
    assert len(errors) == 1 and "HTTP 403" in errors[0] and "pull-requests: write" in errors[0]
    assert "Traceback" not in captured.out + captured.err
    assert fake_github.state.issue_comments(REPO, 12) == []


def test_fail_on_regression_publishes_then_fails(tmp_path, fake_github, target, monkeypatch, capsys):
    canned = CannedCompare(status=1, stderr=("perfgate: regression beyond 5% in: bench_sum",))
    monkeypatch.setattr(compare_mod, "run_compare", canned)
    env = _pr_env(tmp_path, fake_github, target, fail_on_regression="true")
    assert main(env) == 1
    assert "--fail-on-regression" in canned.argvs[0]
    assert read_outputs(Path(env["GITHUB_OUTPUT"]))["verdict"] == "regression"  # published before failing
    errors = _errors(capsys.readouterr().out)
    assert errors and "regression beyond 5% in: bench_sum".replace("%", "%25") in errors[0]


def test_compare_bad_input_is_reported_in_one_line(tmp_path, fake_github, target, monkeypatch, capsys):
    monkeypatch.setattr(compare_mod, "run_compare",
                        CannedCompare(status=2, stderr=("perfgate: error: no benchmarks in benchmarks/",)))
    assert main(_pr_env(tmp_path, fake_github, target)) == 2
    assert _errors(capsys.readouterr().out) == ["::error::perfgate: no benchmarks in benchmarks/"]
    assert fake_github.calls("issues/create-comment") == []


@pytest.mark.parametrize("event_name, event, match", [
    ("workflow_dispatch", workflow_dispatch(base_sha=None, head_sha=None), "missing SHAs"),
    ("push", {"ref": "refs/heads/main"}, "the push event is not handled"),
    ("workflow_dispatch", workflow_dispatch(base_sha="f" * 40, head_sha="e" * 40), "could not be fetched"),
])
def test_bad_input_ends_with_one_error_line(tmp_path, fake_github, target, canned, capsys, event_name, event, match):
    env = actions_env(tmp_path, api_url=fake_github.url, workspace=target.checkout, event_name=event_name,
                      event=event, github_token="ghs_any")
    assert main(env) == 2
    captured = capsys.readouterr()
    errors = _errors(captured.out)
    assert len(errors) == 1 and match in errors[0]
    assert "Traceback" not in captured.out + captured.err
    assert canned.argvs == [] and fake_github.requests == []


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_compare_past_its_deadline_fails_with_the_limit_named(tmp_path, fake_github, target,
                                                                monkeypatch, capsys, sandbox):
    """The workflow's sandbox-time is the compare's deadline, sandboxed or not (security review
    P8); the step then fails with one line naming the limit and its input."""
    canned = CannedCompare(status=-9, stderr=("bench_sum: round 3",), stopped="deadline")
    monkeypatch.setattr(compare_mod, "run_compare", canned)
    ack = {"unsafe_no_sandbox_job_is_read_only": "true"} if sandbox == "none" else {}
    env = _pr_env(tmp_path, fake_github, target, sandbox_time="90m", sandbox=sandbox, **ack)
    assert main(env) == 2
    assert canned.timeouts == [5400.0]
    assert _errors(capsys.readouterr().out) == [
        "::error::perfgate: the pull request's code in perfgate compare reached the sandbox's "
        "wall-time limit (90 min, input sandbox-time): every process of the sandbox was killed "
        "(its last line: bench_sum: round 3)"]


@pytest.mark.parametrize("name, value", [("sandbox_memory", "lots"), ("sandbox_pids", "3"),
                                         ("sandbox_time", "forever"), ("sandbox_disk", "-1G")])
def test_a_limit_input_that_is_not_one_is_named(tmp_path, fake_github, target, canned, capsys,
                                                name, value):
    assert main(_pr_env(tmp_path, fake_github, target, **{name: value})) == 2
    errors = _errors(capsys.readouterr().out)
    assert len(errors) == 1 and f"input {name.replace('_', '-')}: not a" in errors[0]
    assert canned.argvs == []


def test_compare_internal_failure_is_reported_not_raised(tmp_path, fake_github, target, monkeypatch, capsys):
    monkeypatch.setattr(compare_mod, "run_compare", CannedCompare(status=3, stderr=("perfgate: internal error",)))
    env = _pr_env(tmp_path, fake_github, target)
    assert main(env) == 3
    assert _errors(capsys.readouterr().out) == ["::error::perfgate compare failed (exit status 3): perfgate: internal error"]
    assert "exit status 3" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert read_outputs(Path(env["GITHUB_OUTPUT"])) == {}


def test_a_dispatched_run_uses_the_default_branchs_settings(tmp_path, fake_github, target, canned):
    """The App dispatches the default branch's workflow: GITHUB_SHA is that branch, and its
    perfgate.toml is the policy (security review F7), passed to compare as --config."""
    fake_github.state.add_pull(REPO, 7, head_sha=target.head_sha, base_sha=target.base_sha)
    event = workflow_dispatch(base_sha=target.base_sha, head_sha=target.head_sha, pr_number=7, run_id="pg-7")
    env = actions_env(tmp_path, api_url=fake_github.url, workspace=target.checkout, event_name="workflow_dispatch",
                      event=event, github_token="ghs_any", comment="false")
    env["GITHUB_SHA"] = target.base_sha
    assert main(env) == 0
    argv = canned.argvs[0]
    settings = Path(next(a for a in argv if a.startswith("--config=")).split("=", 1)[1])  # --opt=value form
    assert settings.read_text() == (target.origin / "perfgate.toml").read_text()
    # from the hand-off folder, which is not the results folder the sandbox writes (and uploads)
    assert not settings.is_relative_to(Path(env["PERFGATE_OUT_DIR"]))
    assert settings.is_relative_to(Path(env["PERFGATE_OUT_DIR"]).parent / "out-action")


def test_a_pull_request_run_leaves_the_settings_to_the_base_revision(tmp_path, fake_github, target, canned):
    assert main(_pr_env(tmp_path, fake_github, target)) == 0
    assert not any(a.startswith("--config") for a in canned.argvs[0])  # compare's default: the base revision, not the checkout (head)


def test_a_pull_requests_config_input_is_read_from_the_base_not_the_checkout(tmp_path, fake_github, target, canned,
                                                                           capsys):
    # The checkout of a pull_request run is the PR's merge commit: a file it adds is the PR's.
    added = target.checkout / "ci" / "policy.toml"
    added.parent.mkdir(exist_ok=True)
    added.write_text("alpha = 1e-300\n")
    try:
        assert main(_pr_env(tmp_path, fake_github, target, config="ci/policy.toml")) == 2
    finally:
        added.unlink()
    (error,) = _errors(capsys.readouterr().out)
    assert "input config names ci/policy.toml" in error and target.base_sha[:12] in error
    assert canned.argvs == []
    assert main(_pr_env(tmp_path / "again", fake_github, target, config="perfgate.toml")) == 0
    argv = canned.argvs[0]
    settings = Path(next(a for a in argv if a.startswith("--config=")).split("=", 1)[1])  # --opt=value form
    assert settings.read_text() == subprocess.run(["git", "-C", str(target.origin), "show", f"{target.base_sha}:perfgate.toml"],
                                                  capture_output=True, text=True, check=True).stdout


def test_a_results_document_over_the_limit_is_refused_unread(tmp_path, fake_github, monkeypatch, capsys):
    """Red team: publish read a results.json of any size whole. The limit is the App's
    (runner.results.MAX_DOCUMENT_BYTES); here lowered so the test writes little."""
    from runner import results as results_mod

    fake_github.state.add_token("ghs_write")
    fake_github.state.add_pull(REPO, 12, head_sha="a" * 40, base_sha="b" * 40)
    big = tmp_path / "artifact"
    big.mkdir()
    (big / "results.json").write_text(" " * 5000 + "{}")
    monkeypatch.setattr(results_mod, "MAX_DOCUMENT_BYTES", 4096)
    monkeypatch.setattr(results_mod.load, "__defaults__", (4096,))
    assert main(_comment_env(tmp_path / "c", fake_github, big), ["comment"]) == 2
    (error,) = _errors(capsys.readouterr().out)
    assert "over the 4096-byte limit" in error and fake_github.calls("issues/create-comment") == []


def test_one_full_validation_per_boundary_and_reports_rendered_once(tmp_path, fake_github, target, canned,
                                                                      monkeypatch):
    """The compare writes results.json validated (the engine's output); the publish step
    validates what the sandboxed compare left once (runner.results.load) and checks only the
    fields it sets before writing it again; the sandboxed compare renders no report (the
    publish step renders report.md and report.html once, from the validated document)."""
    import sys

    from runner import report

    fake_github.state.add_token("ghs_write")
    original, calls = results_mod.validation_problems, []
    monkeypatch.setattr(results_mod, "validation_problems", lambda d: calls.append(d) or original(d))
    renders = []
    original_render = report.render

    def counted(doc, fmt, **kw):
        renders.append((fmt, kw.get("max_chars")))
        return original_render(doc, fmt, **kw)

    # the step's summary; write_reports
    for module in (report, sys.modules["runner.report.render"]):
        monkeypatch.setattr(module, "render", counted)
    env = _pr_env(tmp_path / "run1", fake_github, target)
    assert main(env) == 0
    # one by the canned compare's dump, one by the publish step's load: 2 (was 3: its dump again)
    assert len(calls) == 2 and all(c.get("run_id") is None for c in calls)
    assert "--no-reports" in canned.argvs[0]
    # write_reports: report.md within a comment's size, report.html whole (it ignores the limit)
    assert [fmt for fmt, limit in renders if limit == report.COMMENT_LIMIT] == ["md", "html"]
    doc = results_mod.load(read_outputs(Path(env["GITHUB_OUTPUT"]))["results"])
    assert doc["pull_request"]["number"] == 12  # what the step set was written, and is valid


def test_the_fields_the_publish_step_sets_are_checked(tmp_path):
    from action import publish

    doc = results_mod.check_fields(publish.with_run_metadata(
        results_doc(), run_id="1", run_url="https://github.com/o/r/actions/runs/1", pr_number=3,
        pr_url="https://github.com/o/r/pull/3", base_label="main"), publish.RUN_FIELDS)
    assert doc["base"]["ref"] == "main"
    with pytest.raises(results_mod.ResultsError, match="run_url"):
        results_mod.check_fields(publish.with_run_metadata(
            results_doc(), run_id="1", run_url="x" * 600, pr_number=None, pr_url=None), publish.RUN_FIELDS)
