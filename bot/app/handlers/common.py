"""What the handlers share: the :data:`router` they register on, and the pieces of a run request."""

from __future__ import annotations

from ..actions import Action, CancelRun, RunSpec
from ..commands import Command
from ..events import Event, Router
from ..facts import Facts, PullInfo

#: Every handler, by event and action (``bot.app.events.Router``).
router = Router()


def installation_of(event: Event) -> int | None:
    return event.installation_id


def default_branch(event: Event, facts: Facts) -> str | None:
    return (event.data.get("repository") or {}).get("default_branch") or facts.default_branch


def pr_spec(event: Event, facts: Facts, pull: PullInfo, trigger: str, key: str, *,
             command: Command | None = None, react_comment_id: int | None = None) -> RunSpec:
    return RunSpec(key=key, repository=event.repository or "", installation_id=installation_of(event), kind="pr",
                   trigger=trigger, head_sha=pull.head_sha, base_sha=pull.base_sha, pr_number=pull.number,
                   head_ref=pull.head_ref, base_ref=pull.base_ref, requested_by=event.sender,
                   filter=command.filter if command else None, rounds=command.rounds if command else None,
                   threshold=command.threshold if command else None,
                   profile=bool(command and command.name == "profile"), react_comment_id=react_comment_id,
                   workflow_ref=default_branch(event, facts))


def supersede(facts: Facts, reason: str) -> list[Action]:
    """Cancel every active run of the PR (one run per PR at a time; the newest request wins)."""
    return [CancelRun(r.key, reason) for r in facts.runs if r.active]
