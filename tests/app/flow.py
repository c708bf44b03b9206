"""Helpers of the App's integration tests: deliver a payload, read the sticky comment, play
the runner."""

from __future__ import annotations

from runner.report import MARKER
from testkit import payloads as P
from testkit.app_fakes import results_zip


def deliver(client, built, delivery=None):
    name, payload = built
    body = P.encode(payload)
    return client.post("/webhook", data=body, headers=P.headers(name, body, delivery=delivery))


def sticky(gh, number: int = 7):
    comments = [c for c in gh.state.issue_comments(P.REPO, number) if c.body.startswith(MARKER)]
    assert len(comments) == 1, [c.body[:80] for c in comments]
    return comments[0]


def upload(scene, dispatch, doc, *, name: str | None = None) -> None:
    """What the Action uploads for a dispatched run."""
    scene.artifacts[dispatch["run_id"]] = [(name or f"perfgate-results-{dispatch['inputs']['run-id']}", results_zip(doc))]


def complete(gh, client, dispatch, conclusion: str = "success"):
    """GitHub's workflow_run completed event for a dispatched run."""
    gh.state.workflow_runs[dispatch["run_id"]].update(status="completed", conclusion=conclusion)
    return deliver(client, P.workflow_run_completed(dispatch["run_id"], conclusion=conclusion))


def deliveries(app) -> dict[str, str]:
    """``{delivery_id: status}`` of every stored delivery."""
    from sqlalchemy import select

    from bot.app.store.tables import Delivery

    with app.extensions["perfgate"]["db"].session() as session:
        return {d.delivery_id: d.status for d in session.scalars(select(Delivery))}
