"""bot.app.core.conclude: what follows each step of a run, as primitive actions, without I/O."""

from __future__ import annotations

from bot.app.core import conclude, messages
from bot.app.core.actions import React, UpdateCheckRun, UpdateRun, UpsertComment
from bot.app.core.facts import RunInfo
from testkit.results_doc import results_doc

REPO, HEAD, BASE = "octo/demo", "1" * 40, "2" * 40


def _run(key: str = "k1", status: str = "in_progress", **kw) -> RunInfo:
    """A stored run of PR 7 (``BASE``..``HEAD``)."""
    fields = dict(key=key, status=status, head_sha=HEAD, base_sha=BASE, pr_number=7)
    return RunInfo(**{**fields, "repository": REPO, **kw})


def _spec(**changes) -> RunInfo:
    fields = dict(key="k1", repository=REPO, installation_id=1, kind="pr", trigger="command", head_sha=HEAD,
                  base_sha=BASE, pr_number=7, requested_by="maintainer", react_comment_id=99)
    return RunInfo(**{**fields, **changes})


def test_a_dispatched_run_is_announced_and_its_command_gets_a_rocket():
    actions = conclude.dispatched(_spec(), details_url="https://perf.example/runs/k1", workflow_url=None)
    assert [type(a) for a in actions] == [UpsertComment, React]
    assert "https://perf.example/runs/k1" in actions[0].body and actions[1].content == "rocket"
    assert conclude.dispatched(_spec(pr_number=None, kind="history"), details_url=None, workflow_url=None) == []


def test_a_failed_dispatch_fails_the_check_run_and_the_run_and_says_why():
    error = "GitHub could not dispatch (HTTP 422)"
    actions = conclude.dispatch_failed(_spec(), 5, workflow="perfgate.yml", error=error)
    check, run, comment, reaction = actions
    assert isinstance(check, UpdateCheckRun) and check.check_run_id == 5 and check.fields["conclusion"] == "failure"
    assert run == UpdateRun("k1", {"status": "completed", "conclusion": "failure",
                                   "headline": "dispatch failed: GitHub could not dispatch (HTTP 422)"})
    assert "HTTP 422" in comment.body and reaction.content == "confused"


def test_a_workflow_without_results_is_cancelled_or_failed():
    run = _run(check_run_id=5)
    cancelled = conclude.failed(run, workflow_conclusion="cancelled", workflow_url=None, problem="cancelled")
    assert cancelled[0].fields["conclusion"] == "cancelled" and cancelled[-1].changes["status"] == "cancelled"
    failed = conclude.failed(run, workflow_conclusion="failure", workflow_url=None, problem="no artifact")
    assert failed[0].fields["title"] == "No results" and failed[-1].changes == {
        "status": "completed", "conclusion": "failure", "headline": "no artifact"}


def test_results_conclude_the_check_run_unless_a_regression_is_accepted():
    run = _run(check_run_id=5)
    doc = results_doc()
    assert doc["summary"]["regression"]  # the fixture has a regression beyond any threshold
    check, comment, stored = conclude.concluded(run, doc, fail_threshold=0.0, accepts=[], notes=[],
                                                details_url=None, run_page_url=None)
    assert check.fields["conclusion"] == "failure" and check.fields["actions"] == [conclude.RERUN_BUTTON]
    assert stored.changes["conclusion"] == "failure" and comment.pr_number == 7
    accepted = [{"benchmark": None, "user": "lead", "reason": "known", "pr_number": 7, "sha": HEAD}]
    check, *_ = conclude.concluded(run, doc, fail_threshold=0.0, accepts=accepted, notes=[], details_url=None,
                                   run_page_url=None)
    assert check.fields["conclusion"] == "success" and "accepted by @lead" in check.fields["title"]


def test_a_timed_out_run_without_a_check_run_or_pr_is_only_recorded():
    run = _run(status="queued", base_sha=None, pr_number=None, kind="history")
    assert conclude.timed_out(run, timeout_hours=3, workflow_url=None) == [
        UpdateRun("k1", {"status": "timed_out", "conclusion": "timed_out", "headline": "timed out"})]


def test_a_broken_config_on_the_default_branch_is_said_in_the_comment_not_only_logged():
    from bot.app.core.facts import Conclusion, settled_config

    run = _run(check_run_id=5)
    config, problem = settled_config({"perfgate.toml": "threshold = 'a lot'\n"}, f"{REPO}@main")
    assert problem and "broken" in problem
    facts = Conclusion(run=run, group=(run,), documents={"k1": results_doc()}, config=config, config_problem=problem)
    _, comment, _ = conclude.from_results(facts)
    assert "the perfgate config is broken" in comment.body and "perfgate's defaults" in comment.body
    note = messages.config_note("o/r@main: the perfgate config is broken (<script>x</script> *bold*)")
    assert "<script>" not in note and "*bold*" not in note  # escaped for Markdown
    assert messages.config_note(None) == ""
    read_as_written = Conclusion(run=run, group=(run,), documents={"k1": results_doc()}, config=config)
    _, plain_comment, _ = conclude.from_results(read_as_written)
    assert "perfgate's defaults" not in plain_comment.body
    second = _run("k2", "in_progress", runner="a100", group="g")
    first = _run("k1", "completed", check_run_id=5, runner="h100", group="g")
    group = conclude.group_concluded([first, second], {"k1": results_doc()}, fail_threshold=0.0, accepts=[],
                                     notes={}, details_url=None, run_page_url=None, config_problem=problem)
    assert any(isinstance(a, UpsertComment) and "the perfgate config is broken" in a.body for a in group)
