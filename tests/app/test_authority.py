"""Authority over the GPU runners and the check (security reviews F3, F5, F8, F17; N2, N7), end to end
against the fake GitHub with signed deliveries: approvals bind to the commit (and benchmarks)
approved, strangers get one reply per PR whatever they post, replayed deliveries start nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from testkit import payloads as P
from testkit.results_doc import bench, results_doc

from .flow import complete, deliver, sticky, upload

A, B, C, BASE = "a" * 40, "b" * 40, "c" * 40, "2" * 40
STRANGER_LINES = (Path(__file__).parent / "cases" / "payload_stranger_comments.txt").read_text().splitlines()


def at(seconds: float) -> str:
    """An ISO time ``seconds`` from now, whole seconds as GitHub writes them."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def gh(fake_github):
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    fake_github.state.set_permission(P.REPO, "triager", "triage")
    return fake_github


def comment(client, gh, text, *, written_at, login="maintainer"):
    row = gh.state.create_comment(P.REPO, 7, text, login, "User")
    deliver(client, P.issue_comment("created", text, comment_id=row.id, login=login, written_at=written_at))
    return row


def replies(gh):
    """The App's comments that are not the sticky one."""
    return [c for c in gh.state.issue_comments(P.REPO, 7) if not c.body.startswith("<!-- perfgate -->")
            and c.user_type == "Bot"]


def push(client, gh, sha, *, fork=None, pushed_at):
    gh.state.pulls[(P.REPO, 7)].head_sha = sha
    deliver(client, P.pull_request("synchronize", head_sha=sha, base_sha=BASE, labels=("performance",), fork=fork,
                                   updated_at=pushed_at))


# -- F3, N2, N7: /perf run on a fork runs the full SHA named, seen before the comment ------------
def test_a_fork_push_after_the_command_is_not_run(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",), fork="eve/demo",
                                   updated_at=at(-120)))
    comment(client, gh, f"/perf run --sha {A}", written_at=at(-90))
    push(client, gh, B, fork="eve/demo", pushed_at=at(-60))  # the maintainer reviews B ...
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [A]
    assert f"`/perf run --sha {B}`" in sticky(gh).body  # waiting for approval: the full SHA to name
    # ... and comments /perf run --sha B; the fork pushes C before the job reads the PR
    gh.state.pulls[(P.REPO, 7)].head_sha = C
    comment(client, gh, f"/perf run --sha {B}", written_at=at(-30))
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [A], "C ran without anyone approving it"
    (answer,) = replies(gh)
    assert "Not started" in answer.body and f"`/perf run --sha {C}`" in answer.body
    # C's synchronize arrives (pushed after the comment): still waiting for an approval
    push(client, gh, C, fork="eve/demo", pushed_at=at(-10))
    assert len(gh.state.dispatches) == 1 and "waiting for approval" in sticky(gh).body
    assert f"`/perf run --sha {C}`" in sticky(gh).body
    # a command written after C was pushed that names C runs C
    comment(client, gh, f"/perf run --sha {C}", written_at=at(0))
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [A, C]


def test_a_fork_run_without_sha_is_refused_with_the_full_head(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    deliver(client, P.pull_request("opened", head_sha=A, base_sha=BASE, fork="eve/demo", updated_at=at(-120)))
    comment(client, gh, "/perf run", written_at=at(-30))
    assert gh.state.dispatches == []
    (answer,) = replies(gh)
    assert "without `--sha`" in answer.body and f"`/perf run --sha {A}`" in answer.body


def test_perf_run_with_a_sha_binds_to_it(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=B, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    comment(client, gh, f"/perf run --sha {A}", written_at=at(-5))  # reviewed A, the head is B
    assert gh.state.dispatches == [] and "is not the head" in replies(gh)[0].body
    # B named, but never shown to the App as the PR's head before the comment: not run (N2)
    comment(client, gh, f"/perf run --sha {B}", written_at=at(-4))
    assert gh.state.dispatches == [] and "cannot tell that this head was there" in replies(gh)[1].body
    push(client, gh, B, fork="eve/demo", pushed_at=at(-3))
    comment(client, gh, f"/perf run --sha {B}", written_at=at(0))
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [B]


# The reviewed commit and another one with the same first 7 (and 8) digits (review N2, S5c).
REVIEWED, COLLIDING = "b1c2d3e4" + "1" * 32, "b1c2d3e4" + "f" * 32


@pytest.mark.parametrize("named", [REVIEWED[:7], COLLIDING[:39]])
def test_a_shortened_sha_is_refused_with_a_clear_reply(client, gh, named):
    gh.state.add_pull(P.REPO, 7, head_sha=COLLIDING, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    deliver(client, P.pull_request("opened", head_sha=COLLIDING, base_sha=BASE, fork="eve/demo", updated_at=at(-60)))
    comment(client, gh, f"/perf run --sha {named}", written_at=at(0))
    assert gh.state.dispatches == []
    (answer,) = replies(gh)
    assert "full commit SHA" in answer.body and f"not {len(named)}" in answer.body
    assert [r["content"] for r in gh.state.reactions] == ["confused"]


def test_a_head_sharing_the_prefix_of_the_reviewed_sha_is_not_dispatched(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=REVIEWED, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    deliver(client, P.pull_request("labeled", head_sha=REVIEWED, base_sha=BASE, labels=("performance",),
                                   fork="eve/demo", updated_at=at(-120)))
    # the fork force-pushes the colliding commit; the App sees it before the comment
    push(client, gh, COLLIDING, fork="eve/demo", pushed_at=at(-60))
    comment(client, gh, f"/perf run --sha {REVIEWED}", written_at=at(0))
    # a fork's label alone runs nothing, and the colliding head is refused
    assert gh.state.dispatches == []
    (answer,) = replies(gh)
    assert f"The head is now `{COLLIDING}`" in answer.body and f"`/perf run --sha {COLLIDING}`" in answer.body
    assert "waiting for approval" in sticky(gh).body and COLLIDING in sticky(gh).body


def test_an_approval_binds_to_the_head_reviewed_when_its_push_never_reached_the_app(client, gh):
    """Review N7, S5d: the App saw C long ago; the maintainer reviews B (pushed after C, its
    ``synchronize`` never processed) and comments; the fork pushes C back before the job runs."""
    gh.state.add_pull(P.REPO, 7, head_sha=C, base_sha=BASE, labels=["performance"], head_repo="eve/demo")
    deliver(client, P.pull_request("opened", head_sha=C, base_sha=BASE, fork="eve/demo", updated_at=at(-300)))
    gh.state.pulls[(P.REPO, 7)].head_sha = B  # pushed at t-120: its event is late (or failed)
    gh.state.pulls[(P.REPO, 7)].head_sha = C  # pushed back after the comment, before the job
    comment(client, gh, "/perf run", written_at=at(-60))
    assert gh.state.dispatches == [], "C ran although the maintainer reviewed B"
    comment(client, gh, f"/perf run --sha {B}", written_at=at(-50))  # what the maintainer saw: not the head
    assert gh.state.dispatches == []
    first, second = replies(gh)
    assert f"`/perf run --sha {C}`" in first.body and "is not the head" in second.body
    # naming C, which the App saw before this comment, is an approval of C
    comment(client, gh, f"/perf run --sha {C}", written_at=at(0))
    assert [d["inputs"]["head-sha"] for d in gh.state.dispatches] == [C]


# -- F8: /perf accept covers the head and the benchmarks it was given for -----------------------
def _measure(client, gh, scene, dispatch, head, benches):
    upload(scene, dispatch, results_doc(benches, base_sha=BASE, head_sha=head))
    complete(gh, client, dispatch)


def test_an_accept_does_not_cover_later_pushes(client, gh, scene):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"])
    deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",)))
    _measure(client, gh, scene, gh.state.dispatches[0], A, [bench("bench_norm", "regression", 1.10)])
    comment(client, gh, "/perf accept small and expected", written_at=at(2))
    first = gh.state.check_runs[min(gh.state.check_runs)]
    assert first["conclusion"] == "success" and "accepted by @maintainer" in first["output"]["title"]

    push(client, gh, B, pushed_at=at(3))
    _measure(client, gh, scene, gh.state.dispatches[1], B,
             [bench("bench_norm", "regression", 1.60), bench("bench_softmax", "regression", 2.50)])
    second = gh.state.check_runs[max(gh.state.check_runs)]
    assert second["head_sha"] == B and second["conclusion"] == "failure", second["output"]["title"]
    assert "accepted" not in second["output"]["title"] and "Regression accepted" not in sticky(gh).body


def test_an_accept_covers_only_the_benchmarks_that_had_regressed(client, gh, scene):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"])
    deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",)))
    _measure(client, gh, scene, gh.state.dispatches[0], A,
             [bench("bench_norm", "regression", 1.10), bench("bench_softmax", "unchanged", 1.0)])
    comment(client, gh, "/perf accept", written_at=at(2))
    comment(client, gh, "/perf run", written_at=at(3))  # the same head measured again
    _measure(client, gh, scene, gh.state.dispatches[1], A,
             [bench("bench_norm", "regression", 1.10), bench("bench_softmax", "regression", 1.40)])
    assert gh.state.check_runs[max(gh.state.check_runs)]["conclusion"] == "failure"


def test_an_accept_before_any_result_accepts_nothing(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"])
    deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",)))
    comment(client, gh, "/perf accept", written_at=at(2))
    assert "nothing to accept" in replies(gh)[0].body


# -- F5: permission before any reply; one reply per PR for everyone else ------------------------
def test_a_stranger_gets_one_reply_per_pr_whatever_they_post(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE)
    posts = [*STRANGER_LINES, "/perf run --rounds lots", "/perf frobnicate", "/perf run", "/perf accept",
             "/perf run 'unclosed"]
    for i, text in enumerate(posts):
        comment(client, gh, text, written_at=at(i), login="stranger")
    (answer,) = replies(gh)
    assert "@stranger" in answer.body and "write, maintain or admin" in answer.body
    assert "security-team" not in answer.body and "attacker.example" not in answer.body
    assert gh.state.dispatches == [] and gh.state.reactions == []


def test_a_triage_users_labels_get_one_reply(client, gh):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE)
    for _ in range(5):
        deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",),
                                       sender="triager"))
    comment(client, gh, "/perf run", written_at=at(0), login="triager")
    assert len(replies(gh)) == 1 and gh.state.dispatches == []


# -- F17: a replayed delivery (new X-GitHub-Delivery, same signed body) starts nothing new -------
def test_replaying_a_check_run_rerequest_dispatches_once(client, gh, scene):
    gh.state.add_pull(P.REPO, 7, head_sha=A, base_sha=BASE, labels=["performance"])
    deliver(client, P.pull_request("labeled", head_sha=A, base_sha=BASE, labels=("performance",)))
    _measure(client, gh, scene, gh.state.dispatches[0], A, [bench("bench_norm", "unchanged", 1.0)])
    (check_id,) = gh.state.check_runs
    key = gh.state.check_runs[check_id]["external_id"]
    captured = P.check_run("rerequested", external_id=key, head_sha=A, check_run_id=check_id)
    for i in range(4):
        assert deliver(client, captured, delivery=f"replayed-{i}").status_code == 202
    assert len(gh.state.dispatches) == 2  # the first run and one re-run
    rerun = gh.state.check_runs[max(gh.state.check_runs)]
    assert len(gh.state.check_runs) == 2 and rerun["status"] == "queued"  # not cancelled by the replays


def test_the_stored_head_keeps_the_earliest_time_it_was_seen(app):
    from bot.app.store import store as app_store
    from bot.history.points import parse_time

    t1, t2, t3 = (parse_time(f"2026-01-0{d}T00:00:00Z") for d in (1, 2, 3))
    with app.extensions["perfgate"]["db"].session() as session, session.begin():
        app_store.save_pull(session, P.REPO, 7, {"head_sha": A, "head_seen_at": t2})
        app_store.save_pull(session, P.REPO, 7, {"head_sha": A, "head_seen_at": t3})  # a later event, same head
        assert app_store.get_pull(session, P.REPO, 7).head_seen_at == t2
        app_store.save_pull(session, P.REPO, 7, {"head_sha": A, "head_seen_at": t1})
        assert app_store.get_pull(session, P.REPO, 7).head_seen_at == t1
        app_store.save_pull(session, P.REPO, 7, {"head_sha": B})  # another head, time unknown
        assert app_store.get_pull(session, P.REPO, 7).head_seen_at is None
        app_store.save_pull(session, P.REPO, 7, {"head_sha": C, "head_seen_at": t3})
        assert app_store.get_pull(session, P.REPO, 7).head_seen_at == t3


# -- P5: /perf bisect builds only commits of the default branch's history ----------------------
def test_a_bisect_of_a_fork_commit_is_refused_and_one_of_the_default_branch_runs(client, gh):
    good, bad, fork_head = "d" * 40, "e" * 40, "f" * 40
    gh.state.add_commits(P.REPO, [good, bad])
    gh.state.add_commits(P.REPO, [fork_head], on_default_branch=False)  # refs/pull/7/head
    gh.state.add_pull(P.REPO, 7, head_sha=fork_head, base_sha=bad, head_repo="eve/demo")
    comment(client, gh, f"/perf bisect {good} {fork_head}", written_at=at(-60))
    unknown = "9" * 40  # a SHA the repository has no commit for (one announced, pushed later)
    comment(client, gh, f"/perf bisect {unknown} {bad}", written_at=at(-50))
    assert gh.state.dispatches == []
    said = [c.body for c in replies(gh)]
    assert len(said) == 2
    assert f"`{fork_head}` is not in the history of the default branch" in said[0]
    assert f"`{unknown}` is not" in said[1] and f"`{bad}`" not in said[1]
    comment(client, gh, f"/perf bisect {good} {bad}", written_at=at(-40))
    (dispatch,) = gh.state.dispatches
    assert dispatch["inputs"]["bisect"] == "true" and dispatch["inputs"]["head-sha"] == bad
    compares = [r for r in gh.requests if r.operation_id == "repos/compare-commits-with-basehead"]
    assert [r.path.rsplit("/", 1)[1] for r in compares][-2:] == [f"main...{good}", f"main...{bad}"]
