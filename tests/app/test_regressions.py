"""bot.app.core.regressions and the commands about the default branch: which change points open a
tracked regression, when one is over, what a bisect's outcome and a command lead to — plain data
in, actions out — and a request measured on several runner groups (bot.app.core.conclude)."""

from __future__ import annotations

import dataclasses
import json

import datetime as dt

import pytest

from bot.app.core import conclude, regressions
from bot.app.core.actions import (CommentOnCulprit, Notify, OpenRegression, Reply, SaveRegression,
                                  StartRun, UpdateCheckRun, UpdateRun, UpsertComment,
                                  UpsertTrackingIssue, dispatch_inputs)
from bot.app.core.facts import Facts, RegressionInfo, RunInfo
from bot.app.core.handlers import decide
from bot.app.core.events import Event
from bot.history.series import ChangePoint, Point, Series
from testkit import payloads as P
from testkit.results_doc import bench, results_doc

REPO = P.REPO
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
RUNNERS = (("h100", ("self-hosted", "h100")), ("mi300x", ("self-hosted", "mi300x")))
GH = "https://github.com"


def _series(name: str, runner: str, cps: list[ChangePoint], n: int = 12, key: str | None = None) -> Series:
    fingerprint = {"key": key or f"fp-{runner}", "label": f"GPU · {runner}", "runner_label": runner}
    points = [Point(sha=f"{i:040x}", time=T0 + dt.timedelta(hours=i), value=1e-3) for i in range(n)]
    return Series(benchmark=name, fingerprint=fingerprint, points=points, change_points=cps)


def _cp(index: int, ratio: float, sha: str | None = None, prs=()) -> ChangePoint:
    return ChangePoint(index=index, sha=sha or f"{index:040x}", prev_sha=f"{index - 1:040x}", before=1e-3,
                       after=1e-3 * ratio, ratio=ratio, p_value=0.001, prs=tuple(prs))


def _after(series, tracked=(), accepts=(), threshold=0.02):
    return regressions.after_history(repository=REPO, installation_id=4711, series=series, tracked=list(tracked),
                                     accepts=list(accepts), threshold=threshold, runners=RUNNERS, workflow_ref="main",
                                     public_url="https://perfgate.example.org", github_url=GH)


def test_a_confirmed_regression_opens_a_tracked_regression_its_issue_and_its_bisect_on_its_runner_group():
    actions = _after([_series("bench_a", "h100", [_cp(6, 1.08)])])
    assert [type(a) for a in actions] == [OpenRegression, UpsertTrackingIssue, StartRun, SaveRegression]
    spec = actions[0].spec
    assert (spec.benchmark, spec.good_sha, spec.bad_sha) == ("bench_a", f"{5:040x}", f"{6:040x}")
    assert spec.runner == "h100" and spec.runs_on == ("self-hosted", "h100") and spec.fingerprint == "fp-h100"
    run = actions[2].spec
    assert run.kind == "bisect" and run.regression == spec.key and actions[3].changes == {"bisect_key": run.key}
    assert (run.base_sha, run.head_sha, run.filter) == (spec.good_sha, spec.bad_sha, "bench_a")
    inputs = dispatch_inputs(run)
    assert inputs["bisect"] == "true" and inputs["runs-on"] == '["self-hosted", "h100"]' and inputs["runner"] == "h100"
    issue = actions[1]
    assert issue.key == spec.key and issue.close is None
    assert regressions_mark(spec.key) in issue.body and "bench_a" in issue.title and "h100" in issue.title
    assert "https://perfgate.example.org/octo/demo/bench/bench_a" in issue.body


def regressions_mark(key: str) -> str:
    from bot.app.core import messages

    return messages.regression_mark(key)


def test_small_old_and_improving_change_points_open_nothing():
    series = [_series("small", "h100", [_cp(6, 1.01)]), _series("faster", "h100", [_cp(6, 0.8)]),
              _series("old", "h100", [_cp(4, 1.5)], n=40)]
    assert _after(series) == []


def test_the_change_points_of_one_commit_are_one_regression_of_the_clearest():
    series = [_series("bench_a", "h100", [_cp(6, 1.05)]), _series("bench_b", "h100", [_cp(6, 1.3)]),
              _series("bench_c", "mi300x", [_cp(6, 1.04)])]
    opened = [a.spec for a in _after(series) if isinstance(a, OpenRegression)]
    assert [(s.benchmark, s.runner, s.also) for s in opened] == [("bench_b", "h100", ("bench_a",)),
                                                                 ("bench_c", "mi300x", ())]


def _tracked(**changes) -> RegressionInfo:
    key = regressions.regression_key(REPO, "fp-h100", f"{6:040x}")
    fields = dict(key=key, repository=REPO, benchmark="bench_a", good_sha=f"{5:040x}", bad_sha=f"{6:040x}",
                  fingerprint="fp-h100", runner="h100", runs_on=("self-hosted", "h100"), ratio=1.08,
                  bisect_key=regressions.bisect_key(key), issue_number=31, installation_id=4711)
    return RegressionInfo(**{**fields, **changes})


def test_a_tracked_regression_is_left_alone_until_its_series_recovers():
    series = [_series("bench_a", "h100", [_cp(6, 1.08)])]
    assert _after(series, [_tracked()]) == []
    # a job that stopped half way: what its stored state lacks, by the same idempotent actions
    actions = _after(series, [_tracked(bisect_key=None)])
    assert [type(a) for a in actions] == [StartRun, SaveRegression]
    assert actions[0].spec.key == regressions.bisect_key(_tracked().key)
    assert [type(a) for a in _after(series, [_tracked(issue_number=None)])] == [UpsertTrackingIssue]
    recovered = [_series("bench_a", "h100", [_cp(6, 1.08), _cp(10, 1 / 1.08, prs=[{"number": 9, "title": "Revert x"}])],
                         n=14)]
    save, issue = _after(recovered, [_tracked()])
    assert save.changes["status"] == "closed" and "recovered with a revert" in save.changes["closed_reason"]
    assert issue.close == "completed" and "Closed" in issue.body


def test_an_accepted_or_vanished_change_point_closes_it_as_not_planned():
    accepted = [{"pr_number": None, "sha": f"{6:040x}", "benchmark": "bench_a", "user": "lead"}]
    save, issue = _after([_series("bench_a", "h100", [_cp(6, 1.08)])], [_tracked()], accepted)
    assert "accepted" in save.changes["closed_reason"] and issue.close == "not_planned"
    save, issue = _after([_series("bench_a", "h100", [])], [_tracked()])
    assert "no longer detected" in save.changes["closed_reason"]
    assert _after([_series("bench_a", "h100", [])], [_tracked(status="closed")]) == []


def _bisect_doc(status="found", culprit_sha="c" * 40, pr=12) -> dict:
    culprit = {"sha": culprit_sha, "subject": "Slow loop (#12)", "pr": pr, "ratio": 1.08, "ci_low": 1.06,
               "ci_high": 1.1, "step_ratio": 1.079, "index": 3, "suspects": 1}
    section = {"good": {"sha": "a" * 40}, "bad": {"sha": "b" * 40}, "status": status, "commits": 9,
               "culprit": culprit if status == "found" else None, "suspects": [culprit], "steps": [culprit],
               "compares": [], "budget": {"compares": 5, "spent_s": 300.0}, "more_than_one_step": False}
    return {**results_doc([bench("bench_a", "regression", 1.08)]), "bisect": section}


def _bisect_run(key: str) -> RunInfo:
    return RunInfo(key=key, status="in_progress", head_sha="b" * 40, base_sha="a" * 40,
                   kind="bisect", repository=REPO, check_run_id=77)


def test_a_bisect_that_names_the_culprit_tells_its_pr_its_issue_and_the_webhook_once():
    r = _tracked()
    actions = regressions.bisect_concluded(r, _bisect_run(r.bisect_key), _bisect_doc(), culprit_pr=12,
                                           details_url="https://perfgate.example.org/runs/k", public_url=None,
                                           github_url=GH)
    kinds = [type(a) for a in actions]
    assert kinds == [UpdateCheckRun, SaveRegression, CommentOnCulprit, UpsertTrackingIssue, Notify, UpdateRun]
    check, save, comment, issue, message, run = actions
    assert check.fields["conclusion"] == "neutral" and "cccccccccccc" in check.fields["title"]
    assert save.changes == {"status": "found", "outcome": save.changes["outcome"], "culprit_sha": "c" * 40,
                            "culprit_pr": 12}
    assert comment.pr_number == 12 and "#31" not in comment.body and f"{GH}/{REPO}/issues/31" in comment.body
    assert "pull request #12" in issue.body and "Slow loop" in issue.body
    assert "culprit cccccccccccc (#12)" in message.text and f"<{GH}/{REPO}/issues/31|tracking issue>" in message.text


def test_a_superseded_bisect_only_ends_its_run_and_a_failed_one_says_so():
    r = _tracked()
    actions = regressions.bisect_concluded(r, _bisect_run("older"), _bisect_doc(), culprit_pr=12, details_url=None,
                                           public_url=None, github_url=GH)
    assert [type(a) for a in actions] == [UpdateCheckRun, UpdateRun]
    assert regressions.bisect_failed(r, _bisect_run("older"), "timed out", public_url=None, github_url=GH) == []
    save, issue, message = regressions.bisect_failed(r, _bisect_run(r.bisect_key), "its workflow failed",
                                                     public_url=None, github_url=GH)
    assert save.changes["status"] == "unresolved" and "its workflow failed" in issue.body
    assert "did not report a result" in message.text


def test_untrusted_text_in_a_message_cannot_mention_or_link():
    r = _tracked(benchmark="<!channel> bench")
    doc = _bisect_doc()
    doc["bisect"]["culprit"]["subject"] = "<https://evil.example|click> & more"
    *_, message, _ = regressions.bisect_concluded(r, _bisect_run(r.bisect_key), doc, culprit_pr=None,
                                                  details_url=None, public_url=None, github_url=GH)
    assert "<!channel>" not in message.text and "&lt;!channel&gt;" in message.text
    assert "<https://evil.example" not in message.text and "&amp; more" in message.text


# -- commands about the default branch ---------------------------------------------------------------------------
GOOD, BAD = "a" * 40, "b" * 40
#: on the default branch: GOOD an older commit of it, BAD its tip (GitHub's compare statuses)
ON_BRANCH = {GOOD: "behind", BAD: "identical"}
WRITE = Facts(permission="write", runners=RUNNERS, public_url=None, places=ON_BRANCH)


def ev(built) -> Event:
    name, payload = built
    return Event(name, "d-1", payload, payload.get("action"))


def test_perf_bisect_in_an_issue_tracks_the_range_on_the_runner_group_named():
    actions = decide(ev(P.issue_comment("created", f"/perf bisect {GOOD} {BAD} bench_a --runner mi300x",
                                        on_pull=False, number=40)), WRITE)
    opened = next(a for a in actions if isinstance(a, OpenRegression)).spec
    assert (opened.good_sha, opened.bad_sha, opened.benchmark, opened.runner) == (GOOD, BAD, "bench_a", "mi300x")
    assert opened.trigger == "command" and opened.requested_by == "maintainer"
    start = next(a for a in actions if isinstance(a, StartRun)).spec
    assert start.runs_on == ("self-hosted", "mi300x") and start.kind == "bisect"
    assert actions[-1].content == "rocket"


@pytest.mark.parametrize("body, why", [(f"/perf bisect {GOOD}", "needs the range"),
                                       (f"/perf bisect {GOOD} {BAD} --runner a100", "not a runner group"),
                                       ("/perf bisect abc1234 def5678", "full commit SHA")])
def test_a_bisect_it_cannot_take_is_answered(body, why):
    actions = decide(ev(P.issue_comment("created", body, on_pull=False, number=40)), WRITE)
    assert isinstance(actions[-1], Reply) and why in actions[-1].body


@pytest.mark.parametrize("places", [{GOOD: "behind", BAD: "diverged"},  # BAD: a fork's commit
                                    {GOOD: "behind", BAD: "ahead"},  # BAD: a commit not merged yet
                                    {GOOD: "behind", BAD: None},  # BAD: no commit GitHub knows
                                    {GOOD: "behind"}])  # BAD: not asked (no default branch named)
def test_a_bisect_of_commits_outside_the_default_branch_is_refused_and_says_which(places):
    command = P.issue_comment("created", f"/perf bisect {GOOD} {BAD}", on_pull=False, number=40)
    actions = decide(ev(command), Facts(permission="write", places=places))
    assert not any(isinstance(a, (OpenRegression, StartRun)) for a in actions)
    assert isinstance(actions[-1], Reply)
    assert f"`{BAD}` is not in the history of the default branch" in actions[-1].body
    assert GOOD not in actions[-1].body
    on_a_commit = decide(ev(P.commit_comment(f"/perf bisect {GOOD}", commit_id=BAD)),
                         Facts(permission="write", places=places))
    assert on_a_commit == []  # logged only: the App cannot answer on a commit


def test_the_places_of_a_bisects_commits_are_asked_only_for_bisect():
    from bot.app.core.facts import FactRequest, wants_places
    from bot.app.core.handlers import commit_comment, issue_comment

    bisect = P.issue_comment("created", f"/perf bisect {GOOD} {BAD}", on_pull=False)
    request = issue_comment.facts_for(ev(bisect))
    assert request.places_of == (GOOD, BAD) and request.needs_github
    assert issue_comment.facts_for(ev(P.issue_comment("created", "/perf run"))).places_of == ()
    on_commit = ev(P.commit_comment(f"/perf bisect {GOOD}", commit_id=BAD))
    assert commit_comment.facts_for(on_commit).places_of == (GOOD, BAD)
    assert wants_places(FactRequest(places_of=(GOOD, GOOD)), "write", "main") == (GOOD,)
    assert wants_places(FactRequest(places_of=(GOOD,)), "read", "main") == ()  # stranger: no call
    assert wants_places(FactRequest(places_of=(GOOD,)), "write", None) == ()


def test_in_a_tracking_issue_bisect_runs_again_and_accept_closes_it():
    r = _tracked()
    facts = Facts(permission="maintain", regression=r)
    actions = decide(ev(P.issue_comment("created", "/perf bisect", on_pull=False, number=31, comment_id=77)), facts)
    start, save = [a for a in actions if isinstance(a, (SaveRegression, StartRun))]
    assert save.changes["bisect_key"] == start.spec.key == regressions.bisect_key(r.key, 77)
    accepted = decide(ev(P.issue_comment("created", "/perf accept known cost of the new feature", on_pull=False,
                                         number=31)), facts)
    save, issue = [a for a in accepted if isinstance(a, (SaveRegression, UpsertTrackingIssue))]
    assert save.changes["status"] == "closed" and "accepted by @maintainer: known cost" in save.changes["closed_reason"]
    assert issue.close == "not_planned"


def test_in_an_issue_only_the_default_branchs_commands_are_taken_and_only_from_writers():
    assert decide(ev(P.issue_comment("created", "/perf run", on_pull=False)), WRITE) == []
    refused = decide(ev(P.issue_comment("created", f"/perf bisect {GOOD} {BAD}", on_pull=False, login="visitor")),
                     Facts(permission="read"))
    assert [type(a).__name__ for a in refused] == ["RememberRefusal", "Reply"]


def test_perf_bisect_on_a_commit_bisects_up_to_that_commit():
    actions = decide(ev(P.commit_comment(f"/perf bisect {GOOD} bench_a", commit_id=BAD)), WRITE)
    opened = next(a for a in actions if isinstance(a, OpenRegression)).spec
    assert (opened.good_sha, opened.bad_sha, opened.runner) == (GOOD, BAD, None)
    assert decide(ev(P.commit_comment(f"/perf bisect {GOOD}", commit_id=BAD)), Facts(permission="read")) == []
    assert decide(ev(P.commit_comment("/perf bisect", commit_id=BAD)), WRITE) == []  # no range: logged only


# -- one request, several GPU models ----------------------------------------------------------------------------
def test_a_label_starts_one_run_per_runner_group_sharing_one_key():
    pull = P.pull_request("labeled", head_sha=BAD, base_sha=GOOD, labels=("performance",))
    starts = [a.spec for a in decide(ev(pull), Facts(permission="write", runners=RUNNERS)) if isinstance(a, StartRun)]
    assert [(s.runner, s.runs_on) for s in starts] == list(RUNNERS)
    assert starts[0].key == starts[0].group == starts[1].group != starts[1].key


def _group_run(key, runner, status="completed", conclusion=None, check=5):
    return RunInfo(key=key, status=status, head_sha=BAD, base_sha=GOOD, pr_number=7,
                   repository=REPO, check_run_id=check, runner=runner, group="g",
                   conclusion=conclusion, headline="its workflow failed" if conclusion == "failure" else None)


def test_the_group_reports_one_table_per_model_and_fails_if_any_fails():
    fine = results_doc([bench("bench_a", "unchanged", 1.0)])
    slow = results_doc([bench("bench_a", "regression", 1.2)])
    runs = [_group_run("g", "h100"), _group_run("g2", "mi300x", status="in_progress")]
    check, comment = conclude.group_concluded(runs, {"g": fine}, fail_threshold=0.05, accepts=[], notes={},
                                              details_url=None, run_page_url=None)
    assert check.fields["status"] == "in_progress" and "conclusion" not in check.fields
    assert "### `h100`" in comment.body and "### `mi300x`" in comment.body and "⏳" in comment.body
    runs[1] = _group_run("g2", "mi300x")
    check, comment = conclude.group_concluded(runs, {"g": fine, "g2": slow}, fail_threshold=0.05, accepts=[],
                                              notes={}, details_url=None, run_page_url=None)
    assert check.fields["conclusion"] == "failure" and check.check_run_id == 5
    assert comment.body.count("<!-- perfgate -->") == 1 and comment.body.index("h100") < comment.body.index("mi300x")
    assert check.fields["title"].startswith("h100:") and "mi300x: 1 regression" in check.fields["title"]
    runs[1] = _group_run("g2", "mi300x", conclusion="failure")
    check, comment = conclude.group_concluded(runs, {"g": fine}, fail_threshold=0.05, accepts=[], notes={},
                                              details_url=None, run_page_url=None)
    assert check.fields["conclusion"] == "failure" and "its workflow failed" in comment.body
    assert isinstance(comment, UpsertComment)


def test_selection_misses_are_tracked_regressions_the_culprits_pr_skipped():
    from bot.app.core.actions import dispatch_inputs
    from bot.app.core.regressions import selection_misses

    skipped = {"selection": {"mode": "affected", "run": 1, "skipped": [{"name": "bench_loss", "reason": "not affected"}]}}
    got = selection_misses([("bench_loss", "found", 12, skipped),      # skipped by #12, then regressed: a miss
                            ("bench_attn", "found", 12, skipped),      # #12 ran it: no miss
                            ("bench_loss", "closed", 13, skipped),     # over: no longer forced
                            ("bench_norm", "open", None, None)])       # no culprit PR known
    assert list(got) == ["bench_loss"] and "#12" in got["bench_loss"]
    spec = RunInfo(key="k", repository="o/r", installation_id=1, kind="pr", trigger="label",
                   head_sha="b" * 40, base_sha="a" * 40)
    forced = dataclasses.replace(spec, force_run=tuple(got))
    assert json.loads(dispatch_inputs(forced)["force-run"]) == ["bench_loss"]
    assert "force-run" not in dispatch_inputs(spec)
