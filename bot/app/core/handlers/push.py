"""``push`` to the default branch: a history run of the pushed commit (one per runner group: each
GPU model's history is a series of its own)."""

from __future__ import annotations

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts, RunInfo, run_key
from .common import default_branch, installation_of, start_runs
from .routes import routes

ZERO_SHA = "0" * 40


def facts_for(event: Event) -> FactRequest:
    """The stored run of the pushed commit, if any, and the target's runner groups."""
    return FactRequest(keyed_runs=(run_key(event.repository, "push", event.after),), config=True)


@routes.on("push", facts=facts_for)
def on_push(event: Event, facts: Facts) -> list[Action]:
    default = default_branch(event, facts)
    after, before = event.after or ZERO_SHA, event.before or ZERO_SHA
    if event.ref != f"refs/heads/{default}" or event.deleted or after == ZERO_SHA:
        return []
    key = run_key(event.repository, "push", after)
    if any(r.key == key for r in facts.runs):
        return []
    spec = RunInfo(key=key, repository=event.repository or "",
                   installation_id=installation_of(event), kind="history", trigger="push",
                   head_sha=after, base_sha=None if before == ZERO_SHA else before,
                   head_ref=default, base_ref=default, requested_by=event.sender,
                   workflow_ref=default)
    return start_runs(spec, facts.runners)
