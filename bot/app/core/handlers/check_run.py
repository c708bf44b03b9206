"""``check_run`` ``rerequested`` / ``requested_action`` (``rerun``): the same run again, once per
check run (the key comes from the signed payload, not the unsigned delivery id)."""

from __future__ import annotations

from .. import messages
from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts, RunInfo, run_key
from .common import default_branch, installation_of, start_runs, supersede
from .routes import routes

#: The identifier of the check run's "Re-run" button.
RERUN_ACTION = "rerun"


def facts_for(event: Event) -> FactRequest:
    """The stored run of this check run (its ``external_id``) and the other runs of its PR."""
    return FactRequest(run_key=event.check_run.get("external_id") or "")


def rerun(event: Event, facts: Facts, run, key: str) -> list[Action]:
    """Start ``run`` again as run ``key``, superseding the PR's active runs (``facts.runs``);
    nothing when a run with ``key`` exists. The caller derives ``key`` from signed parts of the
    payload, so a replayed delivery with a new, unsigned delivery id starts nothing."""
    if any(r.key == key for r in facts.runs):
        return []
    spec = RunInfo(key=key, repository=event.repository or "",
                   installation_id=installation_of(event), kind=run.kind, trigger="rerun",
                   head_sha=run.head_sha, base_sha=run.base_sha, pr_number=run.pr_number,
                   head_ref=run.head_ref, base_ref=run.base_ref, requested_by=event.sender,
                   filter=run.filter, rounds=run.rounds, threshold=run.threshold,
                   profile=run.profile, workflow_ref=default_branch(event, facts))
    # a run of several runner groups is run again on each of them (its stored groups)
    group = [r for r in facts.runs if run.group and r.group == run.group] or [run]
    runners = [(r.runner, r.runs_on) for r in group if r.runner]
    return [*supersede(facts, messages.SUPERSEDED_BY_RERUN), *start_runs(spec, runners)]


def _rerun(event: Event, facts: Facts) -> list[Action]:
    if event.action == "requested_action" and event.requested_action != RERUN_ACTION:
        return []
    if facts.run is None:
        return []
    # Re-run the newest check run to run again.
    key = run_key(event.repository, facts.run.key, "rerun", event.check_run.get("id"), event.action,
                  event.requested_action)
    return rerun(event, facts, facts.run, key)


routes.on("check_run", "rerequested", facts=facts_for)(_rerun)
routes.on("check_run", "requested_action", facts=facts_for)(_rerun)
