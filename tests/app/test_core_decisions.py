"""The App's decisions that lived in the shell (review 2026-12-01 §2, issue 33), now pure
functions over plain data: which lease, the fork-safety binding of a workflow run by name, who
makes the App read a PR and since when its head is known, what ``/perf accept`` covers, which
configuration stands, which runs may be cancelled and the check run's texts, what follows a
run's end and in which order, the visibility a delivery records, the head a PR's row keeps, the
statuses that end a run."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.app.core import access, conclude, messages, regressions
from bot.app.core.actions import CancelWorkflowRun, Notify, UpdateCheckRun, UpdateRun, UpsertComment
from bot.app.core.facts import (ENDED_STATES, Conclusion, ConcludedRun, FactRequest, PullInfo,
                                RegressionInfo, RunInfo, bound_run, concluded_run, head_seen,
                                head_seen_after, lease_name, settled_config, wants_pull)
from testkit.results_doc import bench, results_doc

REPO, HEAD = "octo/demo", "1" * 40
T0 = dt.datetime(2026, 12, 1, 12, tzinfo=dt.timezone.utc)


def _run(key="k1", status="queued", **kw):
    return RunInfo(key=key, status=status, head_sha=HEAD, repository=kw.pop("repository", REPO), **kw)


# -- which lease --------------------------------------------------------------------------------------
def test_the_lease_is_the_prs_from_the_payload_else_from_the_stored_run_of_the_same_repository():
    assert lease_name(REPO, 7) == f"{REPO}#7"
    assert lease_name(REPO, None, _run(pr_number=9)) == f"{REPO}#9"
    assert lease_name(REPO, None, _run(pr_number=9, repository="evil/fork")) == REPO  # never another's PR
    assert lease_name(REPO, None, _run(pr_number=None)) == REPO  # a push's run: the repository
    assert lease_name(None, None) == "-"


# -- fork safety: a workflow run found by its name ---------------------------------------------------
@pytest.mark.parametrize("by_name, path, bound", [
    (_run(), ".github/workflows/perfgate.yml", True),
    (_run(), ".github/workflows/evil.yml", False),  # a workflow a PR adds cannot report for a run
    (_run(repository="evil/fork"), ".github/workflows/perfgate.yml", False),
    (_run(workflow_run_id=5), ".github/workflows/perfgate.yml", False),  # bound to another workflow run
    (_run(status="completed"), ".github/workflows/perfgate.yml", False),
    (None, ".github/workflows/perfgate.yml", False),
])
def test_a_workflow_run_binds_by_name_only_to_an_active_unbound_run_of_the_apps_workflow(by_name, path, bound):
    found = bound_run(None, by_name, repository=REPO, workflow_path=path, workflow="perfgate.yml")
    assert found == (by_name if bound else None)


def test_a_workflow_run_known_by_its_id_binds_whatever_its_name_says():
    by_id = _run("k0", workflow_run_id=5)
    assert bound_run(by_id, _run(), repository=REPO, workflow_path=None, workflow="perfgate.yml") is by_id


# -- who makes the App read a PR, and since when its head is known -----------------------------------
def test_only_someone_who_may_command_makes_the_app_read_the_pr():
    request = FactRequest(pr_number=7, pull_if_permitted=True)
    assert wants_pull(request, "write") and wants_pull(request, "admin")
    assert not wants_pull(request, "read") and not wants_pull(request, None)
    assert not wants_pull(FactRequest(pr_number=7), "write") and not wants_pull(FactRequest(pull_if_permitted=True),
                                                                                "write")


def test_the_head_is_known_since_the_stored_time_only_while_it_is_the_stored_head():
    pull = PullInfo(7, HEAD, "2" * 40)
    assert head_seen(HEAD, T0, pull) == T0
    assert head_seen("3" * 40, T0, pull) is None


@pytest.mark.parametrize("stored_head, stored_seen, changes, after", [
    (HEAD, T0, {"head_sha": "3" * 40, "head_seen_at": T0 + dt.timedelta(hours=1)}, T0 + dt.timedelta(hours=1)),
    (HEAD, T0, {"head_sha": "3" * 40}, None),  # a new head, not dated: unknown
    (HEAD, T0, {"head_sha": HEAD, "head_seen_at": T0 + dt.timedelta(hours=1)}, T0),  # the same head: kept
    (HEAD, T0, {"head_seen_at": T0 - dt.timedelta(hours=1)}, T0 - dt.timedelta(hours=1)),  # earlier evidence
    (HEAD, None, {"head_seen_at": T0}, T0),
    (HEAD, T0, {"labeled": True}, T0),
])
def test_a_prs_row_keeps_the_earliest_time_its_current_head_was_seen(stored_head, stored_seen, changes, after):
    assert head_seen_after(stored_head, stored_seen, changes) == after


# -- /perf accept --------------------------------------------------------------------------------------
def test_an_accept_covers_the_regressions_of_the_head_it_was_given_for():
    doc = results_doc([bench("b_slow", "regression", 1.2), bench("b_same", "unchanged", 1.0),
                       bench("a_slow", "regression", 1.1)], base_sha="2" * 40, head_sha=HEAD)
    assert concluded_run("k", HEAD, doc) == ConcludedRun("k", HEAD, ("a_slow", "b_slow"))
    accepts = [{"pr_number": 7, "sha": HEAD, "benchmark": "b"}, {"pr_number": 7, "sha": "3" * 40, "benchmark": "c"},
               {"pr_number": 8, "sha": HEAD, "benchmark": "d"}]
    assert conclude.covering(accepts, _run(pr_number=7)) == accepts[:1]
    assert conclude.covering(accepts, _run(pr_number=None)) == []


# -- the configuration -----------------------------------------------------------------------------------
def test_a_broken_or_unreadable_config_gives_the_defaults_and_says_why():
    config, problem = settled_config({"pyproject.toml": "[tool.perfgate]\nlabel = 'perf'\n"}, "o/r@main")
    assert config.label == "perf" and problem is None
    config, problem = settled_config({"pyproject.toml": "[tool.perfgate]\nlabel = 3\n"}, "o/r@main")
    assert config.label == "performance" and "broken" in problem and "o/r@main" in problem
    config, problem = settled_config(None, "o/r@main", "HTTP 403")
    assert config.label == "performance" and "cannot read" in problem and "HTTP 403" in problem


# -- cancelling and starting -----------------------------------------------------------------------------
def test_only_an_active_run_is_cancelled_and_its_check_run_says_so():
    run = _run(status="in_progress", check_run_id=11, workflow_run_id=22)
    assert conclude.cancel(run, "closed") == [
        CancelWorkflowRun(REPO, 22),
        UpdateCheckRun(REPO, 11, {"status": "completed", "conclusion": "cancelled", "title": messages.CANCELLED_TITLE,
                                  "summary": "closed"}),
        UpdateRun("k1", {"status": "cancelled", "conclusion": "cancelled", "headline": "closed"})]
    assert conclude.cancel(_run(), "x") == [UpdateRun("k1", {"status": "cancelled", "conclusion": "cancelled",
                                                             "headline": "x"})]  # not dispatched yet
    assert conclude.cancel(_run(status="completed"), "x") == [] and conclude.cancel(None, "x") == []


def test_a_queued_run_whose_workflow_started_is_in_progress_github_first():
    url = "https://github.com/o/r/actions/runs/1"
    assert conclude.in_progress(_run(check_run_id=11), url) == [
        UpdateCheckRun(REPO, 11, {"status": "in_progress", "title": "Benchmarking on a GPU runner",
                                  "summary": f"The workflow run started: {url}."}),
        UpdateRun("k1", {"status": "in_progress", "workflow_run_url": url})]
    assert conclude.in_progress(_run(workflow_url="https://github.com/o/r/actions/runs/0"), None) == [
        UpdateRun("k1", {"status": "in_progress", "workflow_run_url": "https://github.com/o/r/actions/runs/0"})]
    assert conclude.in_progress(_run(status="in_progress"), url) == []


# -- a run's end ------------------------------------------------------------------------------------------
def _own():
    """What ends run ``k1`` itself: its check run, its comment, its row."""
    return [UpdateCheckRun(REPO, 1, {}), UpsertComment(REPO, 7, "x"),
            UpdateRun("k1", {"status": "completed"})]


def test_what_follows_a_runs_end_comes_with_it_and_its_row_last():
    own = _own()
    compare = _run(pr_number=7)
    assert conclude.closing(compare, own, Conclusion(run=compare)) == own  # nothing follows
    assert conclude.closing(compare, own, None, github=False) == own[2:]  # no installation: the row
    grouped = _run(pr_number=7, check_run_id=1, group="k1")  # the group's check run and comment
    check, comment, row = conclude.closing(grouped, own, Conclusion(run=grouped, group=(grouped,)))
    assert (check.check_run_id, check.fields["conclusion"], comment.pr_number) == (1, "failure", 7)
    assert row == own[2]
    history = _run(kind="history")  # a default-branch result: its regressions (none moved here)
    assert conclude.closing(history, own, Conclusion(run=history), with_results=True) == own
    bisect = _run(kind="bisect")  # a bisect without results: its regression says so
    r = RegressionInfo(key="r1", repository=REPO, benchmark="b", good_sha="2" * 40, bad_sha=HEAD,
                       bisect_key="k1")
    facts = Conclusion(run=bisect, regression=r)
    save, issue, message, row = conclude.closing(bisect, own[2:], facts, problem="it failed")
    assert save.changes["status"] == "unresolved" and "it failed" in issue.body
    assert isinstance(message, Notify) and row == own[2]


def test_the_order_of_what_ends_a_run():
    own = _own()
    follow = [UpsertComment(REPO, 7, "group")]
    assert conclude.ending(_run(), own, follow) == [own[0], own[1], follow[0], own[2]]  # the row last
    assert conclude.ending(_run(group="k1"), own, follow) == [follow[0], own[2]]  # the group's texts instead
    assert conclude.ending(_run(), own, follow, github=False) == [follow[0], own[2]]
    assert conclude.ended(own) == {"status": "completed"} and conclude.ended([]) == {}
    assert set(ENDED_STATES) == {"completed", "cancelled", "timed_out"}


# -- visibility -------------------------------------------------------------------------------------------
def test_every_delivery_records_its_repositories_visibility_in_name_order():
    payload = {"repository": {"full_name": "octo/zeta", "private": False},
               "installation": {"id": 1}, "repositories": [{"full_name": "octo/alpha", "private": True},
                                                           {"full_name": "../bad", "private": True}]}
    found = access.visibility_records("repository", "publicized", "octo/zeta", payload)
    assert [name for name, _, _ in found] == sorted(name for name, _, _ in found)
    assert ("octo/zeta", False, True) in found and all(n != "../bad" for n, _, _ in found)
    assert all(not publicized for _, _, publicized in access.visibility_records("push", None, "octo/zeta", payload))


# -- regressions -------------------------------------------------------------------------------------------
def test_only_open_regressions_with_a_culprit_are_followed_into_the_selection():
    def r(key, status, culprit):
        return RegressionInfo(key, REPO, "b", "g" * 40, "h" * 40, status=status, culprit_sha=culprit)
    assert [x.key for x in regressions.followed_culprits([r("a", "open", "c" * 40), r("b", "closed", "c" * 40),
                                                          r("c", "open", None)])] == ["a"]


def test_a_bisects_culprit_and_the_pull_request_its_subject_names():
    culprit = {"sha": "c" * 40, "pr": 12}
    assert regressions.found_culprit({"bisect": {"status": "found", "culprit": culprit}}) == culprit
    assert regressions.found_culprit({"bisect": {"status": "inconclusive", "culprit": culprit}}) is None
    assert regressions.found_culprit({"bisect": {"status": "found", "culprit": {"sha": ""}}}) is None
    assert regressions.found_culprit({}) is None
    assert regressions.named_pr(culprit) == 12
    assert [regressions.named_pr({"pr": v}) for v in (True, 0, -3, "12", None)] == [None] * 5
