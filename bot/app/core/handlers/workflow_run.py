"""``workflow_run`` of a dispatched run: in progress → the check run says so; completed → its
artifact is ingested. A run is found by the workflow run id GitHub gave when it was dispatched,
else (GitHub Enterprise Server without run details) by its name, ``perfgate <run-id>``, which the
App's workflow file sets (``run-name``) — only for a ``workflow_dispatch`` run of the App's
workflow file, which only people with write access can start."""

from __future__ import annotations

import re

from ..actions import Action, Ingest, MarkInProgress, UpdateRun
from ..events import Event
from ..facts import FactRequest, Facts
from .routes import routes


_RUN_NAME = re.compile(r"perfgate ([0-9a-f]{20})")


def dispatched_key(workflow_run: dict) -> str | None:
    """The App's run key in the name of a dispatched workflow run (``perfgate <key>``), or None."""
    if workflow_run.get("event") != "workflow_dispatch":
        return None
    match = _RUN_NAME.fullmatch(str(workflow_run.get("display_title") or workflow_run.get("name") or "").strip())
    return match.group(1) if match else None


def facts_for(event: Event) -> FactRequest:
    """The stored run dispatched as this workflow run (by its id, else by its name)."""
    wr = event.workflow_run
    return FactRequest(workflow_run_id=int(wr["id"]), dispatched_key=dispatched_key(wr),
                       workflow_path=str(wr.get("path") or "").split("@", 1)[0] or None)


def _bind(run, wr: dict) -> list[Action]:
    """Record the workflow run of a run that was dispatched without its id."""
    return [UpdateRun(run.key, {"workflow_run_id": int(wr["id"])})] if run.workflow_run_id is None else []


@routes.on("workflow_run", "completed", facts=facts_for)
def on_workflow_completed(event: Event, facts: Facts) -> list[Action]:
    run = facts.run
    if run is None or not run.active:
        return []  # not ours, or already cancelled/ingested
    wr = event.workflow_run
    return [*_bind(run, wr), Ingest(run.key, int(wr["id"]), wr.get("conclusion"), wr.get("html_url"))]


@routes.on("workflow_run", "in_progress", facts=facts_for)
def on_workflow_started(event: Event, facts: Facts) -> list[Action]:
    run = facts.run
    if run is None or run.status != "queued":
        return []
    wr = event.workflow_run
    return [*_bind(run, wr), MarkInProgress(run.key, wr.get("html_url"))]
