"""A repository's recorded visibility moves only on newer evidence (security review N5), and
its row is written without a check-then-insert race (N10 a).

Deliveries are processed out of the order GitHub sent them (Huey's retries, the sweep of failed
deliveries up to 6 h old, GitHub's Redeliver, two workers): the rule
(``bot.app.core.access.next_visibility``) compares the deliveries' receipt times and fails
closed — a repository recorded private becomes public only through a ``publicized`` delivery
received after the evidence of privacy.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.app.job import executor, sweeps
from bot.app.store import store as app_store
from bot.app.core.access import Visibility, next_visibility
from bot.db import utc_now
from bot.history import reads as history_reads
from bot.history import store as history_store
from testkit import payloads as P

from .flow import deliver, deliveries

T0 = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)


def t(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# -- the rule, pure --------------------------------------------------------------------------------
def test_an_old_public_delivery_never_undoes_privatized():
    """The review's probe: a delivery received at t0 (public) fails; ``privatized`` at t1; the
    sweep processes the old delivery again."""
    state = next_visibility(Visibility(), False, t(0))
    state = next_visibility(state, True, t(1))  # privatized (any evidence of privacy counts)
    assert next_visibility(state, False, t(0)) == state
    # nor a public delivery received later that is no notice of a change (written before it)
    assert next_visibility(state, False, t(5)).private is True
    # nor an old publicized notice (GitHub's Redeliver keeps its receipt time)
    assert next_visibility(state, False, t(0.5), publicized=True) == state
    # a publicized notice received after the evidence of privacy: public again
    assert next_visibility(state, False, t(2), publicized=True) == Visibility(False, t(2), t(2))


def test_evidence_of_privacy_counts_even_when_old_unless_publicized_came_after_it():
    public = next_visibility(Visibility(), False, t(10))  # a plain delivery, first seen
    assert next_visibility(public, True, t(5)) == Visibility(True, t(5), None)  # fail closed
    publicized = next_visibility(Visibility(True, t(0)), False, t(10), publicized=True)
    assert publicized == Visibility(False, t(10), t(10))
    assert next_visibility(publicized, True, t(5)) == publicized  # made public after it: stale
    assert next_visibility(publicized, True, t(11)).private is True


def test_the_same_value_moves_the_evidence_forward():
    state = next_visibility(Visibility(True, t(5)), True, t(8))
    assert state == Visibility(True, t(8), None)
    assert next_visibility(state, True, t(6)) == state
    # a notice no newer than the newest evidence of privacy does not make it public
    assert next_visibility(state, False, t(7), publicized=True).private is True
    # a value never reported before (None) takes whatever comes first; no time known is oldest
    assert next_visibility(Visibility(True, None), False, t(0), publicized=True).private is False


@st.composite
def histories(draw, stale: bool):
    """A repository's true visibility over time and the deliveries GitHub sent about it: a
    notice at each change (``privatized``/``publicized``) and plain deliveries (a PR, a
    comment) carrying the visibility when their payload was written — at receipt, or with
    ``stale`` up to three events earlier; then an order of processing in which each delivery
    comes at least once (retries, the sweep, redeliveries)."""
    state = draw(st.booleans())
    states, sent = [state], []
    for i, kind in enumerate(draw(st.lists(st.sampled_from(["change", "plain"]), min_size=1, max_size=10))):
        at = t(10 * (i + 1))
        if kind == "change":
            state = not state
            sent.append((state, at, not state))
        else:
            lag = draw(st.integers(0, 3)) if stale else 0
            sent.append((states[max(0, len(states) - 1 - lag)], at, False))
        states.append(state)
    extra = draw(st.lists(st.integers(0, len(sent) - 1), max_size=6))
    order = draw(st.permutations(list(range(len(sent))) + extra))
    return state, [sent[i] for i in order]


def _process(order) -> Visibility:
    stored = Visibility()
    for private, at, publicized in order:
        stored = next_visibility(stored, private, at, publicized=publicized)
    return stored


@settings(max_examples=400, deadline=None)
@given(histories(stale=False))
def test_any_order_of_processing_ends_at_the_true_visibility(history):
    truth, order = history
    assert _process(order).private is truth


@settings(max_examples=400, deadline=None)
@given(histories(stale=True))
def test_a_private_repository_is_never_recorded_public_whatever_the_payloads_and_the_order(history):
    """Payloads written before a change and received after it (stale) may keep a public
    repository hidden (fail closed), never show a private one."""
    truth, order = history
    if truth:
        assert _process(order).private is True


# -- end to end: the review's probe -----------------------------------------------------------------
HEAD, BASE = "1" * 40, "2" * 40


@pytest.fixture
def gh(fake_github):
    fake_github.state.add_pull(P.REPO, 7, head_sha=HEAD, base_sha=BASE, labels=["performance"])
    fake_github.state.set_permission(P.REPO, "maintainer", "write")
    return fake_github


def test_the_sweep_processing_an_old_delivery_after_privatized_keeps_the_run_page_hidden(app, client, gh, scene):
    rt = app.extensions["perfgate"]["runtime"]
    deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)))
    (dispatch,) = gh.state.dispatches
    page = f"/runs/{dispatch['inputs']['run-id']}"
    assert client.get(page).status_code == 200  # public: anyone may read it
    scene.failures["checks/create"] = 502  # the /perf run delivery of the public repository fails
    comment = gh.state.create_comment(P.REPO, 7, "/perf run", "maintainer", "User")
    deliver(client, P.issue_comment("created", "/perf run", comment_id=comment.id), delivery="d-old")
    assert deliveries(app)["d-old"] == "failed"
    del scene.failures["checks/create"]
    assert deliver(client, P.repository("privatized"), delivery="d-privatized").status_code == 202
    assert client.get(page).status_code == 404
    # the worker's sweep (15 minutes later) processes the old delivery again
    assert sweeps.lost_deliveries(rt, utc_now() + dt.timedelta(minutes=16)) == ["d-old"]
    rt.queue.enqueue_delivery("d-old")
    assert deliveries(app)["d-old"] == "done" and len(gh.state.dispatches) == 2
    assert client.get(page).status_code == 404
    with rt.db.session() as session:
        assert history_reads.visibility(session, P.REPO) is True
    deliver(client, P.repository("publicized"), delivery="d-publicized")
    assert client.get(page).status_code == 200  # made public again, by a newer notice


# -- the row is written without a race (N10 a) -----------------------------------------------------
def _together(count: int, work) -> list[BaseException]:
    """Run ``work(i)`` in ``count`` real threads released at once; the exceptions raised."""
    barrier, failures = threading.Barrier(count), []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


@pytest.fixture
def db(database_url):
    from bot.db import open_database

    database = open_database(database_url)
    yield database
    database.dispose()


def test_first_writers_of_one_repository_at_once_do_not_collide(db):
    for round_ in range(5):
        name = f"octo/new-{round_}"

        def record(i: int) -> None:
            with db.session() as session, session.begin():
                if i % 2:
                    history_store.get_or_create_repository(session, name)
                else:
                    app_store.record_visibility(session, name, False, t(i))

        assert _together(6, record) == []
        with db.session() as session:
            assert history_reads.visibility(session, name) is False
            assert history_reads.get_repository(session, name).private_at == t(4)


def test_a_privatized_job_and_an_old_delivery_at_once_end_private(db):
    """Two workers: no write is lost between reading the row and writing it."""
    for round_ in range(5):
        name = f"octo/race-{round_}"
        with db.session() as session, session.begin():
            app_store.record_visibility(session, name, False, t(0))

        def record(i: int) -> None:
            with db.session() as session, session.begin():
                if i == 0:
                    app_store.record_visibility(session, name, True, t(10))  # privatized
                else:
                    app_store.record_visibility(session, name, False, t(i))  # old public deliveries

        assert _together(4, record) == []
        with db.session() as session:
            assert history_reads.visibility(session, name) is True


class Later:
    """A job queue that keeps nothing (the test runs the jobs itself)."""

    def enqueue_delivery(self, delivery_id: str) -> None:
        pass


def test_two_first_deliveries_of_a_repository_processed_at_once_both_finish(app, client, gh):
    """The review's R6: a label and a ``/perf run`` on another PR of a repository the App never
    recorded, processed by two worker threads at once."""
    gh.state.add_pull(P.REPO, 8, head_sha="3" * 40, base_sha=BASE, labels=[])
    rt = app.extensions["perfgate"]["runtime"]
    parts = app.extensions["perfgate"]
    queue, parts["queue"] = parts["queue"], Later()  # the intake only stores them; the threads below run the jobs
    try:
        deliver(client, P.pull_request("labeled", head_sha=HEAD, base_sha=BASE, labels=("performance",)),
                delivery="d-label")
        comment = gh.state.create_comment(P.REPO, 8, "/perf run", "maintainer", "User")
        deliver(client, P.issue_comment("created", "/perf run", number=8, comment_id=comment.id), delivery="d-run")
    finally:
        parts["queue"] = queue
    assert deliveries(app) == {"d-label": "queued", "d-run": "queued"}
    with rt.db.session() as session:
        assert history_reads.get_repository(session, P.REPO) is None
    assert _together(2, lambda i: executor.handle_delivery(rt, ("d-label", "d-run")[i])) == []
    assert deliveries(app) == {"d-label": "done", "d-run": "done"}
    assert sorted(d["inputs"]["pr-number"] for d in gh.state.dispatches) == ["7", "8"]
