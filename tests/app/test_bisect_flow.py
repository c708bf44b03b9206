"""Regressions on the default branch, end to end against the fake GitHub: a push measured on two
GPU models (runner groups) → a confirmed change point on one model's series → its bisect
dispatched on that model's runners and a tracking issue → the bisect's results → a comment on the
culprit's pull request, the issue updated, one message to the webhook → the series recovers →
the issue closed. The other model's series stays apart and opens nothing. Then the same under
lost answers and a webhook outage: no issue, comment or message twice."""

from __future__ import annotations

import pytest

from bot.app.job import executor
from bot.app.core import messages
from bot.history import reads as history_reads
from bot.history import store as history_store
from testkit import app_fakes
from testkit import payloads as P
from testkit.fake_github import FakeGitHub, Faults
from tests.history.factory import compare_doc, environment, run_doc, sha

from .flow import complete, deliver, deliveries, upload

BENCH = "bench_norm[rows=4096]"
MODELS = {"h100": environment(gpu="NVIDIA H100", runner="h100"),
          "mi300x": environment(gpu="AMD Instinct MI300X", runner="mi300x")}
CULPRIT_PR = 12


def _config(url: str) -> str:
    return (f'regression_webhook = "{url}"\n[runners.h100]\nlabels = ["self-hosted", "h100"]\n'
            '[runners.mi300x]\nlabels = ["self-hosted", "mi300x"]\n')


@pytest.fixture
def receiver(tmp_path):
    hook = app_fakes.WebhookReceiver(tmp_path / "hook")
    yield hook
    hook.stop()


@pytest.fixture
def app_env(app_env, receiver):  # the webhook receiver on loopback: an address the operator allows
    return {**app_env, "PERFGATE_WEBHOOK_ALLOW": "127.0.0.1/32", "REQUESTS_CA_BUNDLE": receiver.ca_file}


#: operation id → how many of its next answers to lose (carried out, then answered 502)
LOSE: dict[str, int] = {}


@pytest.fixture
def fake_github(github_openapi, scene, request):  # noqa: F811 - a GitHub that can lose answers (and fail)
    lossy = ("issues/create", "issues/update", "issues/create-comment", "actions/create-workflow-dispatch",
             "checks/create", "checks/update")
    faults = getattr(request, "param", None)  # a test's Faults: GitHub failing at random
    handlers = app_fakes.losing_handlers(scene, lossy, LOSE)
    with FakeGitHub(github_openapi, handlers=handlers, faults=faults) as gh:
        gh.state.add_repo(P.REPO)
        gh.state.add_token("ghs_nobody")
        yield gh
        gh.assert_no_violations()
    LOSE.clear()


def _seed(app, points: range, level) -> None:
    """Default-branch history already stored: one result per commit and model."""
    db = app.extensions["perfgate"]["db"]
    with db.session() as session, session.begin():
        for i in points:
            for model, env in MODELS.items():
                history_store.add_result(session, run_doc(i, {BENCH: level(model, i)}, env=env), repository=P.REPO)


def _retry_until_done(app, rounds: int = 10) -> None:
    """What Huey's retries and the sweep do: run every unfinished delivery again until it is done."""
    rt = app.extensions["perfgate"]["runtime"]
    for _ in range(rounds):
        pending = [d for d, status in deliveries(app).items() if status in ("failed", "queued")]
        if not pending:
            return
        for delivery_id in pending:
            try:
                executor.handle_delivery(rt, delivery_id)
            except Exception:  # noqa: BLE001 - it failed again: the next round retries it
                pass
    raise AssertionError(f"deliveries never finished: {deliveries(app)}")


def _push(app, client, gh, scene, i: int, level, rounds: int = 10) -> list[dict]:
    """Push commit ``i``: one history run per model; each model's runner reports its result."""
    before = len(gh.state.dispatches)
    deliver(client, P.push(before=sha(i - 1), after=sha(i)))
    _retry_until_done(app, rounds)
    dispatched = gh.state.dispatches[before:]
    for dispatch in dispatched:
        model = dispatch["inputs"]["runner"]
        doc = compare_doc(i, BENCH, level(model, i - 1), level(model, i), env=MODELS[model], head_sha=sha(i))
        upload(scene, dispatch, doc)
        complete(gh, client, dispatch)
        _retry_until_done(app, rounds)
    return dispatched


def _bisect_result(scene, gh, client, app, dispatch, culprit: str, *, settle: bool = True, rounds: int = 10) -> None:
    """The GPU runner's ``perfgate bisect``: the results of good → bad with the culprit it named."""
    doc = compare_doc(30, BENCH, 1e-3, 1.1e-3, env=MODELS["h100"], head_sha=dispatch["inputs"]["head-sha"])
    entry = {"sha": culprit, "subject": "Use the slower norm (#12)", "pr": CULPRIT_PR, "index": 1, "ratio": 1.1,
             "ci_low": 1.08, "ci_high": 1.12, "step_ratio": 1.1, "suspects": 1}
    doc["bisect"] = {"good": {"sha": dispatch["inputs"]["base-sha"]}, "bad": {"sha": dispatch["inputs"]["head-sha"]},
                     "benchmark": BENCH, "status": "found", "commits": 3, "culprit": entry, "suspects": [entry],
                     "steps": [entry], "more_than_one_step": False, "notes": [],
                     "compares": [dict(entry, outcome="after", problem=None)],
                     "budget": {"compares": 3, "spent_s": 240.0, "max_time": 900, "worst_case": 3, "limit": 40}}
    upload(scene, dispatch, doc)
    complete(gh, client, dispatch)
    if settle:
        _retry_until_done(app, rounds)


#: The step of the h100's series: commit 10 made it 10 % slower (a change point needs points on
#: either side to be significant: 10 before, 8 after).
STEP, PUSHED = 10, 17


def _slowed_on_h100(model: str, i: int) -> float:
    return 1.1e-3 if model == "h100" and STEP <= i <= PUSHED else 1e-3


def _scene(app, gh, scene, receiver_url: str) -> str:
    scene.files[(P.REPO, "perfgate.toml")] = _config(receiver_url)
    culprit = sha(STEP, "merge")
    gh.state.add_pull(P.REPO, CULPRIT_PR, head_sha=sha(STEP, "pr"), base_sha=sha(STEP - 1), title="Use the slower norm")
    gh.state.commit_pulls[(P.REPO, culprit)] = [CULPRIT_PR]
    _seed(app, range(0, PUSHED), _slowed_on_h100)
    return culprit


def _ours(gh, number: int, mark: str) -> list:
    return [c for c in gh.state.issue_comments(P.REPO, number) if mark in c.body]


def test_a_regression_on_one_model_is_bisected_there_reported_once_and_closed_when_it_recovers(
        app, client, fake_github, scene, receiver):
    gh = fake_github
    culprit = _scene(app, gh, scene, receiver.url)

    # the push is measured on both models, in parallel, each on its runner group
    history_runs = _push(app, client, gh, scene, PUSHED, _slowed_on_h100)
    assert sorted((d["inputs"]["runner"], d["inputs"]["runs-on"]) for d in history_runs) == [
        ("h100", '["self-hosted", "h100"]'), ("mi300x", '["self-hosted", "mi300x"]')]
    assert all("bisect" not in d["inputs"] for d in history_runs)

    # one model's series moved: its bisect goes to that model's runners, and a tracking issue opens
    (bisect,) = gh.state.dispatches[2:]
    assert bisect["inputs"]["bisect"] == "true" and bisect["inputs"]["runs-on"] == '["self-hosted", "h100"]'
    assert (bisect["inputs"]["base-sha"], bisect["inputs"]["head-sha"], bisect["inputs"]["filter"]) == (
        sha(STEP - 1), sha(STEP), BENCH)
    (issue,) = gh.state.repo_issues(P.REPO)
    assert issue.login == "perfgate[bot]" and issue.state == "open" and "h100" in issue.title
    assert "dispatched" in issue.body and sha(STEP - 1) in issue.body and sha(STEP) in issue.body

    # each model keeps its own series; the other one opened nothing
    with app.extensions["perfgate"]["db"].session() as session:
        series = history_reads.load_series(session, P.REPO, BENCH)
    by_runner = {s.fingerprint["runner_label"]: s for s in series}
    assert set(by_runner) == {"h100", "mi300x"} and len(by_runner["h100"].points) == PUSHED + 1
    assert by_runner["h100"].change_points and not by_runner["mi300x"].change_points

    # the bisect names the culprit: its PR hears of it, the issue says it, one message goes out
    _bisect_result(scene, gh, client, app, bisect, culprit)
    comments = [c for c in gh.state.issue_comments(P.REPO, CULPRIT_PR) if c.login == "perfgate[bot]"]
    assert len(comments) == 1 and culprit in comments[0].body and f"/issues/{issue.number}" in comments[0].body
    issue = gh.state.issues[(P.REPO, issue.number)]
    assert "pull request #12" in issue.body and culprit[:12] in issue.body
    (message,) = receiver.messages
    assert message["path"] == "/services/T0/B0/secret" and f"culprit {culprit[:12]} (#12)" in message["body"]["text"]
    (check,) = [c for c in gh.state.check_runs.values() if c["head_sha"] == sha(STEP)]
    assert check["conclusion"] == "neutral"

    # GitHub delivers the completion again: nothing is said twice
    deliver(client, P.workflow_run_completed(bisect["run_id"]))
    _retry_until_done(app)
    assert len(gh.state.repo_issues(P.REPO)) == 1 and len(receiver.messages) == 1
    assert len([c for c in gh.state.issue_comments(P.REPO, CULPRIT_PR) if c.login == "perfgate[bot]"]) == 1

    # the series recovers: the issue closes, and still only one message
    _seed(app, range(PUSHED + 1, PUSHED + 9), lambda model, i: 1e-3)
    _push(app, client, gh, scene, PUSHED + 9, lambda model, i: 1e-3)
    issue = gh.state.issues[(P.REPO, issue.number)]
    assert issue.state == "closed" and issue.state_reason == "completed" and "recovered" in issue.body
    assert len(receiver.messages) == 1 and len(gh.state.repo_issues(P.REPO)) == 1


#: The fault tests run on SQLite alone (the flow above runs on both databases; these test retries,
#: not the database, and the suite's time is counted).
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@SQLITE_ONLY
def test_lost_answers_and_a_webhook_outage_never_double_an_issue_a_comment_or_a_message(
        app, client, fake_github, scene, receiver):
    gh = fake_github
    culprit = _scene(app, gh, scene, receiver.url.replace(str(receiver.server.server_port), "1"))  # webhook down
    # GitHub carries out these calls and the answers are lost (the job fails, and is run again)
    LOSE.update({"issues/create": 1, "actions/create-workflow-dispatch": 2, "checks/create": 1})
    _push(app, client, gh, scene, PUSHED, _slowed_on_h100)
    assert len(gh.state.repo_issues(P.REPO)) == 1
    bisects = [d for d in gh.state.dispatches if d["inputs"].get("bisect") == "true"]
    assert len({d["inputs"]["run-id"] for d in bisects}) == 1 == len(bisects)

    LOSE.update({"issues/create-comment": 1, "issues/update": 1})
    _bisect_result(scene, gh, client, app, bisects[0], culprit, settle=False)
    rt = app.extensions["perfgate"]["runtime"]
    for delivery_id in [d for d, status in deliveries(app).items() if status == "failed"] * 3:
        with pytest.raises(Exception):  # the webhook is down: the job fails, the message waits
            executor.handle_delivery(rt, delivery_id)
    assert receiver.messages == [] and "failed" in deliveries(app).values()
    scene.files[(P.REPO, "perfgate.toml")] = _config(receiver.url)  # the receiver is back
    rt.memo.forget()  # ... and the App sees it once the kept configuration expires (memo.TTL)
    _retry_until_done(app)
    with app.extensions["perfgate"]["db"].session() as session:
        from bot.app.store import store as app_store

        (row,) = app_store.regressions_of(session, P.REPO)
    assert row.status == "found" and row.culprit_pr == CULPRIT_PR and row.notified_at is not None
    assert len(gh.state.repo_issues(P.REPO)) == 1
    assert len(_ours(gh, CULPRIT_PR, messages.culprit_mark(row.key, row.bisect_key))) == 1
    assert len(receiver.messages) == 1 and f"culprit {culprit[:12]}" in receiver.messages[0]["body"]["text"]


@SQLITE_ONLY
@pytest.mark.parametrize("fake_github", [Faults(0.15, seed=31, kinds=("502", "503", "secondary-rate-limit"))],
                         indirect=True)
def test_github_failing_at_random_never_doubles_an_issue_a_comment_or_a_message(app, client, fake_github, scene,
                                                                                receiver):
    gh = fake_github
    culprit = _scene(app, gh, scene, receiver.url)
    _push(app, client, gh, scene, PUSHED, _slowed_on_h100, rounds=40)  # GitHub fails often: more retries
    bisects = [d for d in gh.state.dispatches if d["inputs"].get("bisect") == "true"]
    assert len({d["inputs"]["run-id"] for d in bisects}) == 1 == len(bisects)
    _bisect_result(scene, gh, client, app, bisects[0], culprit, rounds=40)
    assert any(r.fault for r in gh.requests)  # faults were injected
    assert len(gh.state.repo_issues(P.REPO)) == 1 and len(receiver.messages) == 1
    assert len([c for c in gh.state.issue_comments(P.REPO, CULPRIT_PR) if c.login == "perfgate[bot]"]) == 1
    assert set(deliveries(app).values()) == {"done"}
