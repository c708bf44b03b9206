"""``workflow_run`` of a dispatched run: in progress → the check run says so; completed → its
artifact is ingested."""

from __future__ import annotations

from ..actions import Action, Ingest, MarkInProgress
from ..events import Event
from ..facts import FactRequest, Facts
from .common import router


def facts_for(event: Event) -> FactRequest:
    """The stored run dispatched as this workflow run."""
    return FactRequest(workflow_run_id=int(event.data["workflow_run"]["id"]))


@router.register("workflow_run", action="completed")
def on_workflow_completed(event: Event, facts: Facts) -> list[Action]:
    run = facts.run
    if run is None or not run.active:
        return []  # not ours, or already cancelled/ingested
    wr = event.data.get("workflow_run") or {}
    return [Ingest(run.key, int(wr["id"]), wr.get("conclusion"), wr.get("html_url"))]


@router.register("workflow_run", action="in_progress")
def on_workflow_started(event: Event, facts: Facts) -> list[Action]:
    run = facts.run
    if run is None or run.status != "queued":
        return []
    return [MarkInProgress(run.key, (event.data.get("workflow_run") or {}).get("html_url"))]
