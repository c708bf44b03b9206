"""What a stranger costs the installation (security review 2026-12-06, P4): the GitHub API calls
(the fake GitHub's request log; the installation token, minted once an hour, left out) that the
App makes for the events of someone without write permission — ``/perf`` comments, their edits,
pushes to and new pull requests from a fork. Before issue 51 every comment cost 3 calls (the
configuration read twice, the permission asked each time) and every push or new PR 2; now the
permission is asked once and remembered, a sender this PR refused before is not asked again, the
configuration is read only for someone who may command (or a labeled PR), and each PR gets its one
reply: the goal is "a stranger's 1,000 comments cost <= 1,000 calls and never a dispatch"
(``evaluation/bot_load.py --strangers 1000`` measures the 1,000)."""

from __future__ import annotations

import collections

from bot.app.github.memo import Memo
from testkit import payloads as P

from .flow import deliver

TOKEN = "apps/create-installation-access-token"
PRS, ROUNDS = (7, 8, 9), 10


def _calls(gh, since: int) -> collections.Counter:
    return collections.Counter(r.operation_id for r in gh.requests[since:]
                               if r.operation_id != TOKEN)


def test_a_strangers_comments_edits_pushes_and_prs_cost_one_reply_per_pr(client, fake_github):
    gh = fake_github
    for number in PRS:
        gh.state.add_pull(P.REPO, number, head_sha=f"{number}" * 40, base_sha="2" * 40,
                          head_repo="eve/demo")
    before, events = len(gh.requests), 0
    for i in range(ROUNDS):
        for number in PRS:
            row = gh.state.create_comment(P.REPO, number, "/perf run", "stranger", "User")
            said = dict(number=number, comment_id=row.id, login="stranger")
            deliver(client, P.issue_comment("created", "/perf run", **said))
            deliver(client, P.issue_comment("edited", f"/perf run --rounds {i + 2}", **said,
                                            previous="/perf run"))
            head = f"{i:x}{number}".ljust(40, "e")
            deliver(client, P.pull_request("synchronize", number=number, head_sha=head,
                                           base_sha="2" * 40, fork="eve/demo", sender="stranger"))
            events += 3
        deliver(client, P.pull_request("opened", number=20 + i, head_sha="c" * 40,
                                       base_sha="2" * 40, fork="eve/demo", sender="stranger"))
        events += 1
    calls = _calls(gh, before)
    print(f"\n{events} stranger events: {sum(calls.values())} GitHub calls {dict(calls)}")
    assert calls == {"repos/get-collaborator-permission-level": 1,
                     "issues/create-comment": len(PRS)}
    assert gh.state.dispatches == [] and gh.state.reactions == []
    for number in PRS:
        (reply,) = [c for c in gh.state.issue_comments(P.REPO, number) if c.user_type == "Bot"]
        assert "@stranger" in reply.body


def test_someone_given_write_access_after_a_refusal_is_asked_again_and_served(client, fake_github):
    """A refusal remembered on the PR skips the question only for comments GitHub marks as no
    owner's, member's or collaborator's: someone given write access since is asked (once the
    remembered answer is older than its time to live) and served."""
    gh = fake_github
    gh.state.add_pull(P.REPO, 7, head_sha="a" * 40, base_sha="2" * 40)
    deliver(client, P.issue_comment("created", "/perf help", login="newcomer", comment_id=1))
    gh.state.set_permission(P.REPO, "newcomer", "write")
    gh_memo(client).forget()  # the answer's time to live is over
    deliver(client, P.issue_comment("created", "/perf help", login="newcomer", comment_id=2,
                                    association="COLLABORATOR"))
    bodies = [c.body for c in gh.state.issue_comments(P.REPO, 7) if c.user_type == "Bot"]
    assert len(bodies) == 2 and "@newcomer" in bodies[0] and "/perf run" in bodies[1]


def gh_memo(client) -> Memo:
    return client.application.extensions["perfgate"]["runtime"].memo


def test_remembered_answers_expire_and_are_kept_per_key():
    now = [100.0]
    memo = Memo(ttl=60, clock=lambda: now[0])
    asked = []

    def ask(value):
        return lambda: asked.append(value) or value

    assert memo.get(("permission", 1, "o/r", "x"), ask("none")) == "none"
    assert memo.get(("permission", 1, "o/r", "x"), ask("write")) == "none"  # remembered
    assert memo.get(("permission", 2, "o/r", "x"), ask("read")) == "read"  # another installation
    now[0] += 61
    assert memo.get(("permission", 1, "o/r", "x"), ask("write")) == "write"  # expired: asked again
    assert asked == ["none", "read", "write"]
