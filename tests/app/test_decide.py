"""bot.app.core.handlers: webhook (published-schema-valid payloads) + facts → actions, without
I/O."""

from __future__ import annotations

import pytest

from bot.app.core import messages
from bot.app.core.actions import (AcceptRegression, CancelRun, Ingest, React, RecordMerge,
                                  RememberCommand, RememberRefusal, Reply, ReplyHistory,
                                  SaveInstallation, SavePull, StartRun)
from bot.app.core.commands import USAGE
from bot.app.core.handlers import decide, handled
from bot.app.core.facts import ConcludedRun, Facts, PullInfo, RunInfo, run_key
from bot.history.points import parse_time
from bot.app.core.events import Event
from testkit import payloads as P

HEAD, BASE, NEW = "a" * 40, "b" * 40, "c" * 40


def ev(built, delivery="d-1") -> Event:
    name, data = built
    return Event(name, delivery, data, data.get("action"))


def starts(actions):
    return [a.spec for a in actions if isinstance(a, StartRun)]


def kinds(actions):
    return [type(a).__name__ for a in actions]


def _run(key: str, status: str, head_sha: str = HEAD, **kw) -> RunInfo:
    """A stored run of PR 7 (``BASE``..``head_sha``)."""
    return RunInfo(key=key, status=status, head_sha=head_sha, base_sha=BASE, pr_number=7, **kw)


PULL = PullInfo(7, HEAD, BASE, "feature", "main")
WRITE = Facts(permission="write", pull=PULL)


# -- pull_request -------------------------------------------------------------------------------
def test_label_by_a_maintainer_starts_a_run_pinned_to_the_head_sha():
    actions = decide(ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",))),
                     Facts(permission="admin"))
    (spec,) = starts(actions)
    assert (spec.head_sha, spec.base_sha, spec.pr_number, spec.repository) == (HEAD, BASE, 7, P.REPO)
    assert spec.kind == "pr" and spec.trigger == "label" and spec.installation_id == P.INSTALLATION
    assert spec.key == run_key(P.REPO, 7, HEAD, "auto", 0)
    updated = parse_time(next(a for a in actions if isinstance(a, SavePull)).changes["head_seen_at"].isoformat())
    assert updated is not None  # the payload's pull_request.updated_at: the head existed then
    assert SavePull(P.REPO, 7, {"labeled": True, "head_sha": HEAD, "base_sha": BASE, "is_fork": False,
                                "head_seen_at": updated, "approved_sha": HEAD}) in actions


def test_the_label_comes_from_the_target_config():
    event = ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, label="performance"))
    assert decide(event, Facts(label="perf", permission="write")) == []
    event = ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, label="perf"))
    assert starts(decide(event, Facts(label="perf", permission="write")))


def test_a_label_from_someone_without_write_permission_runs_nothing_and_is_answered_once():
    event = ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, sender="triager"))
    actions = decide(event, Facts(permission="triage"))
    assert kinds(actions) == ["RememberRefusal", "Reply"] and "triager" in actions[1].body
    assert actions[0] == RememberRefusal(P.REPO, 7, "triager")
    assert decide(event, Facts(permission="triage", refused_before=True)) == []


def test_a_label_on_an_already_measured_head_does_nothing_new():
    facts = Facts(permission="write", runs=(_run("k0", "completed", has_results=True),))
    actions = decide(ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE)), facts)
    assert starts(actions) == []
    # ... unless that run ended without results (it could not start, its workflow failed)
    facts = Facts(permission="write", runs=(_run("k0", "completed"),))
    (spec,) = starts(decide(ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE)), facts))
    assert spec.key == run_key(P.REPO, 7, HEAD, "auto", 1)
    # ... unless that run was cancelled (label removed, added again): a fresh key
    facts = Facts(permission="write", runs=(_run("k0", "cancelled"),))
    (spec,) = starts(decide(ev(P.pull_request("labeled", head_sha=HEAD, base_sha=BASE)), facts))
    assert spec.key == run_key(P.REPO, 7, HEAD, "auto", 1)


def test_synchronize_supersedes_the_older_run():
    facts = Facts(runs=(_run("old", "queued"),))
    actions = decide(ev(P.pull_request("synchronize", head_sha=NEW, base_sha=BASE, labels=("performance",))), facts)
    assert kinds(actions) == ["SavePull", "CancelRun", "StartRun"]
    assert actions[1].key == "old" and "c" * 7 in actions[1].reason
    assert starts(actions)[0].head_sha == NEW and starts(actions)[0].trigger == "synchronize"


def test_synchronize_without_the_label_only_tracks_the_pr():
    actions = decide(ev(P.pull_request("synchronize", head_sha=NEW, base_sha=BASE)),
                     Facts(runs=(_run("old", "queued"),)))
    assert kinds(actions) == ["SavePull"] and actions[0].changes["labeled"] is False


def test_a_push_to_a_fork_needs_a_new_approval():
    facts = Facts(approved_sha=HEAD, runs=(_run("old", "queued"),))
    actions = decide(ev(P.pull_request("synchronize", head_sha=NEW, base_sha=BASE, labels=("performance",),
                                       fork="eve/demo")), facts)
    assert starts(actions) == []
    assert kinds(actions) == ["SavePull", "CancelRun", "UpsertComment"]
    assert actions[0].changes["is_fork"] is True
    assert "/perf run" in actions[2].body and actions[2].body.startswith(messages.MARKER)


def test_reopened_labeled_pr_runs_again_but_a_fork_waits():
    event = ev(P.pull_request("reopened", head_sha=HEAD, base_sha=BASE, labels=("performance",)))
    assert starts(decide(event, Facts()))
    fork = ev(P.pull_request("reopened", head_sha=HEAD, base_sha=BASE, labels=("performance",), fork="eve/demo"))
    assert kinds(decide(fork, Facts(approved_sha="0" * 40))) == ["SavePull", "UpsertComment"]
    assert starts(decide(fork, Facts(approved_sha=HEAD)))


def test_unlabel_and_close_cancel():
    active = Facts(runs=(_run("r1", "in_progress"), _run("r0", "completed", head_sha=BASE)))
    actions = decide(ev(P.pull_request("unlabeled", head_sha=HEAD, base_sha=BASE, label="performance")), active)
    assert kinds(actions) == ["SavePull", "CancelRun", "UpsertComment"] and actions[1].key == "r1"
    assert decide(ev(P.pull_request("unlabeled", head_sha=HEAD, base_sha=BASE, label="bug")), active) == []
    actions = decide(ev(P.pull_request("closed", head_sha=HEAD, base_sha=BASE, merged=True, merge_sha=NEW)), active)
    assert kinds(actions) == ["RecordMerge", "CancelRun", "UpsertComment"]
    assert actions[0] == RecordMerge(P.REPO, 7, NEW, "2026-01-02T00:00:00Z", f"https://github.com/{P.REPO}/pull/7",
                                     "Fuse the layer norm kernels", HEAD)
    assert decide(ev(P.pull_request("closed", head_sha=HEAD, base_sha=BASE)), Facts()) == []


# -- issue_comment ------------------------------------------------------------------------------
def test_perf_run_by_a_maintainer():
    actions = decide(ev(P.issue_comment("created", "/perf run norm --rounds 12\nplease", comment_id=42)), WRITE)
    assert actions[0] == React(P.REPO, 7, 42, "eyes")
    assert RememberCommand(P.REPO, 42, "/perf run norm --rounds 12", "maintainer") in actions
    (spec,) = starts(actions)
    assert (spec.filter, spec.rounds, spec.threshold, spec.profile) == ("norm", 12, None, False)
    assert (spec.head_sha, spec.base_sha, spec.react_comment_id, spec.trigger) == (HEAD, BASE, 42, "command")
    assert spec.key == run_key(P.REPO, 7, HEAD, "comment", 42, "/perf run norm --rounds 12")


def test_perf_run_all_dispatches_every_benchmark():
    from bot.app.core.actions import dispatch_inputs

    (spec,) = starts(decide(ev(P.issue_comment("created", "/perf run --all")), WRITE))
    assert spec.all_benchmarks and dispatch_inputs(spec)["all"] == "true"
    (plain,) = starts(decide(ev(P.issue_comment("created", "/perf run")), WRITE))
    assert not plain.all_benchmarks and "all" not in dispatch_inputs(plain)


def test_perf_profile_sets_profiling():
    (spec,) = starts(decide(ev(P.issue_comment("created", "/perf profile bench_norm")), WRITE))
    assert spec.profile and spec.filter == "bench_norm"


def test_perf_run_supersedes_the_active_run():
    facts = Facts(permission="maintain", pull=PULL, runs=(_run("r1", "queued"),))
    actions = decide(ev(P.issue_comment("created", "/perf run")), facts)
    assert [a.key for a in actions if isinstance(a, CancelRun)] == ["r1"] and starts(actions)


@pytest.mark.parametrize("permission", ["read", "triage", "none", None])
def test_users_without_write_permission_are_refused_once(permission):
    # author_association in the payload says nothing: only the permission API counts.
    event = ev(P.issue_comment("created", "/perf run", login="visitor"))
    assert event.data["comment"]["author_association"] in ("OWNER", "COLLABORATOR", "MEMBER", "CONTRIBUTOR", "NONE")
    actions = decide(event, Facts(permission=permission, pull=PULL))
    assert kinds(actions) == ["RememberRefusal", "Reply"]
    assert actions[0] == RememberRefusal(P.REPO, 7, "visitor") and "@visitor" in actions[1].body
    assert decide(event, Facts(permission=permission, pull=PULL, refused_before=True)) == []


def test_malformed_command_gets_confused_and_usage():
    actions = decide(ev(P.issue_comment("created", "/perf run --rounds lots", comment_id=5)), WRITE)
    assert actions[0] == React(P.REPO, 7, 5, "confused")
    assert isinstance(actions[1], Reply) and "whole number" in actions[1].body and USAGE in actions[1].body


@pytest.mark.parametrize("built", [
    P.issue_comment("created", "/perf run", on_pull=False),
    P.issue_comment("created", "/perf run", user_type="Bot", login="perfgate[bot]"),
    P.issue_comment("created", "Looks good to me"),
])
def test_ignored_comments(built):
    assert decide(ev(built), WRITE) == []


def test_edited_comments_rerun_only_when_the_command_changed():
    same_line = ev(P.issue_comment("edited", "/perf run x\nfixed a typo below", previous="/perf run x\ntypo"))
    assert decide(same_line, WRITE) == []
    respaced = ev(P.issue_comment("edited", "/perf  run  x", previous="/perf run x"))
    assert decide(respaced, Facts(permission="write", pull=PULL, last_command="/perf run x")) == []
    changed = ev(P.issue_comment("edited", "/perf run y", previous="/perf run x"))
    (spec,) = starts(decide(changed, Facts(permission="write", pull=PULL, last_command="/perf run x")))
    assert spec.filter == "y"
    became = ev(P.issue_comment("edited", "/perf run", previous="nice work"))
    assert starts(decide(became, WRITE))


def test_cancel_accept_history_help():
    actions = decide(ev(P.issue_comment("created", "/perf cancel")), WRITE)
    assert isinstance(actions[-1], Reply) and actions[-1].body == messages.nothing_to_cancel()
    facts = Facts(permission="write", pull=PULL, runs=(_run("r1", "queued"),))
    actions = decide(ev(P.issue_comment("created", "/perf cancel", comment_id=3)), facts)
    assert kinds(actions) == ["React", "RememberCommand", "CancelRun", "UpsertComment", "React"]
    assert actions[-1] == React(P.REPO, 7, 3, "+1")
    seen = Facts(permission="write", pull=PULL, concluded=ConcludedRun("r0", BASE, ("bench_a", "bench_b")))
    actions = decide(ev(P.issue_comment("created", "/perf accept expected: more accurate")), seen)
    # the head and benchmarks of the results shown, not the PR's head now (HEAD)
    assert AcceptRegression(P.REPO, 7, BASE, "maintainer", "expected: more accurate", ("bench_a", "bench_b")) in actions
    assert ReplyHistory(P.REPO, 7, "bench_x") in decide(ev(P.issue_comment("created", "/perf history bench_x")), WRITE)
    assert Reply(P.REPO, 7, USAGE) in decide(ev(P.issue_comment("created", "/perf help")), WRITE)


def test_run_on_a_closed_pr_is_answered_not_dispatched():
    closed = Facts(permission="write", pull=PullInfo(7, HEAD, BASE, state="closed"))
    actions = decide(ev(P.issue_comment("created", "/perf run")), closed)
    assert not starts(actions) and isinstance(actions[-1], Reply)


# -- workflow_run, check_run, installation, ping, push ------------------------------------------
def test_workflow_completed_ingests_only_active_known_runs():
    event = ev(P.workflow_run_completed(777, conclusion="success"))
    assert decide(event, Facts(run=_run("r1", "queued", workflow_run_id=777))) == [
        Ingest("r1", 777, "success", f"https://github.com/{P.REPO}/actions/runs/777")]
    assert decide(event, Facts(run=_run("r1", "cancelled", workflow_run_id=777))) == []
    assert decide(event, Facts()) == []


def test_workflow_started_marks_a_queued_run_in_progress():
    event = ev(P.workflow_run("in_progress", 777))
    assert event.data["workflow_run"]["conclusion"] is None
    (action,) = decide(event, Facts(run=_run("r1", "queued", workflow_run_id=777)))
    assert action.key == "r1"
    assert decide(event, Facts(run=_run("r1", "in_progress", workflow_run_id=777))) == []


def test_a_run_dispatched_without_its_id_is_found_by_name_and_bound_to_it():
    from bot.app.core.actions import UpdateRun
    from bot.app.core.handlers import facts_for
    from bot.app.core.handlers.workflow_run import dispatched_key

    key = run_key("x")
    event = ev(P.workflow_run_completed(777, conclusion="success"))
    event.data["workflow_run"]["display_title"] = f"perfgate {key}"
    assert facts_for(event).dispatched_key == key
    assert facts_for(event).workflow_path == ".github/workflows/perfgate.yml"
    assert decide(event, Facts(run=_run(key, "queued"))) == [
        UpdateRun(key, {"workflow_run_id": 777}),
        Ingest(key, 777, "success", f"https://github.com/{P.REPO}/actions/runs/777")]
    for wr in ({"event": "pull_request", "display_title": f"perfgate {key}"},
               {"event": "workflow_dispatch", "display_title": f"perfgate {key} and more"},
               {"event": "workflow_dispatch", "display_title": "perfgate " + "1" * 40}):
        assert dispatched_key(wr) is None


def test_check_run_rerun_repeats_the_run_at_the_same_shas():
    old = _run("r1", "completed", filter="norm")
    (spec,) = starts(decide(ev(P.check_run("rerequested", external_id="r1", head_sha=HEAD), "d-9"), Facts(run=old)))
    assert (spec.head_sha, spec.base_sha, spec.filter, spec.trigger) == (HEAD, BASE, "norm", "rerun")
    assert spec.key == run_key(P.REPO, "r1", "rerun", 555, "rerequested", None)
    assert starts(decide(ev(P.check_run("requested_action", external_id="r1", head_sha=HEAD)), Facts(run=old)))
    assert decide(ev(P.check_run("requested_action", external_id="r1", head_sha=HEAD, identifier="other")),
                  Facts(run=old)) == []
    assert decide(ev(P.check_run("rerequested", external_id="zz", head_sha=HEAD)), Facts()) == []


def test_installation_events():
    assert decide(ev(P.installation("created", account="octo")), Facts()) == [SaveInstallation(P.INSTALLATION, "octo", True)]
    assert decide(ev(P.installation("deleted")), Facts())[0].active is False
    assert decide(ev(P.ping()), Facts()) == [] and handled("ping", None)


def test_push_to_the_default_branch_starts_a_history_run():
    (spec,) = starts(decide(ev(P.push(before=BASE, after=HEAD)), Facts()))
    assert (spec.kind, spec.head_sha, spec.base_sha, spec.pr_number) == ("history", HEAD, BASE, None)
    assert decide(ev(P.push(before=BASE, after=HEAD, ref="refs/heads/feature")), Facts()) == []
    assert decide(ev(P.push(before=BASE, after="0" * 40)), Facts()) == []


def test_unhandled_events():
    assert not handled("issues", "opened") and not handled("pull_request", "assigned")
    assert handled("pull_request", "labeled") and handled("issue_comment", "edited")
    assert not handled("issue_comment", "deleted") and handled("installation", "suspend")


@pytest.mark.parametrize("text", ["/perf run --rounds lots", "/perf x`@octo/security-team`y", "/perf run 'open"])
def test_a_strangers_malformed_command_is_refused_not_parsed(text):
    event = ev(P.issue_comment("created", text, login="visitor"))
    actions = decide(event, Facts(permission="none"))
    assert kinds(actions) == ["RememberRefusal", "Reply"] and "@octo" not in actions[1].body
    assert decide(event, Facts(permission="none", refused_before=True)) == []


def _replies(actions):
    return [a.body for a in actions if isinstance(a, Reply)]


def test_fork_runs_need_the_full_sha_of_a_head_seen_before_the_comment():
    fork = PullInfo(7, HEAD, BASE, is_fork=True)
    named = ev(P.issue_comment("created", f"/perf run --sha {HEAD}", written_at="2026-01-01T12:00:00Z"))
    for seen, runs in (("2026-01-01T11:59:00Z", True), ("2026-01-01T12:00:00Z", False),
                       ("2026-01-01T12:01:00Z", False), (None, False)):
        facts = Facts(permission="write", pull=fork, head_seen_at=parse_time(seen))
        assert bool(starts(decide(named, facts))) is runs, seen
    # without --sha a fork's head is not run, however early the App saw it (review N7): the
    # maintainer may have reviewed a later push whose event never reached the App
    bare = ev(P.issue_comment("created", "/perf run", written_at="2026-01-01T12:00:00Z"))
    early = Facts(permission="write", pull=fork, head_seen_at=parse_time("2026-01-01T11:00:00Z"))
    actions = decide(bare, early)
    assert not starts(actions) and f"`/perf run --sha {HEAD}`" in _replies(actions)[0]
    profile = ev(P.issue_comment("created", "/perf profile norm", written_at="2026-01-01T12:00:00Z"))
    assert not starts(decide(profile, early))
    # the repository's own branches are pushed by people with write access: no proof needed
    assert starts(decide(bare, Facts(permission="write", pull=PULL)))


def test_a_sha_binds_exactly_never_by_prefix():
    """Review N2: the head shares 39 digits with the SHA named; it is another commit."""
    colliding = PullInfo(7, HEAD[:39] + "b", BASE, "feature", "main")
    named = ev(P.issue_comment("created", f"/perf run --sha {HEAD}"))
    actions = decide(named, Facts(permission="write", pull=colliding))
    assert not starts(actions)
    (reply,) = _replies(actions)
    assert f"`/perf run --sha {colliding.head_sha}`" in reply and f"The head is now `{colliding.head_sha}`" in reply
    assert starts(decide(ev(P.issue_comment("created", f"/perf run --sha {HEAD.upper()}")), WRITE))


@pytest.mark.parametrize("built,keep", [
    (P.issue_comment("created", "/perf run"), True),
    (P.issue_comment("edited", "/perf run gemm", previous="/perf run"), True),
    (P.issue_comment("created", "LGTM, thanks!"), False),
    (P.issue_comment("created", "see /perf run below"), False),
    (P.issue_comment("created", "/perf run", on_pull=False), False),
    (P.issue_comment("created", "/perf run", login="ci[bot]", user_type="Bot"), False),
    (P.pull_request("labeled", head_sha=HEAD, base_sha=BASE), True),
])
def test_only_deliveries_a_handler_could_act_on_are_relevant(built, keep):
    from bot.app.core.handlers import relevant

    assert relevant(ev(built)) is keep
    if not keep:  # and indeed nothing would be done with them
        assert decide(ev(built), Facts(permission="admin")) == []
