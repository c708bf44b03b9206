"""What the handlers share: the pieces of a run request (they register on
``bot.app.core.handlers.routes``)."""

from __future__ import annotations

import dataclasses

from ..actions import Action, CancelRun, StartRun
from ..commands import Command
from ..events import Event
from ..facts import Facts, PullInfo, RunInfo, run_key

def installation_of(event: Event) -> int | None:
    return event.installation_id


def default_branch(event: Event, facts: Facts) -> str | None:
    return event.default_branch or facts.default_branch


def pr_spec(event: Event, facts: Facts, pull: PullInfo, trigger: str, key: str, *,
             command: Command | None = None, react_comment_id: int | None = None) -> RunInfo:
    return RunInfo(key=key, repository=event.repository or "",
                   installation_id=installation_of(event), kind="pr", trigger=trigger,
                   head_sha=pull.head_sha, base_sha=pull.base_sha, pr_number=pull.number,
                   head_ref=pull.head_ref, base_ref=pull.base_ref, requested_by=event.sender,
                   filter=command.filter if command else None, rounds=command.rounds if command else None,
                   threshold=command.threshold if command else None,
                   profile=bool(command and command.name == "profile"), react_comment_id=react_comment_id,
                   all_benchmarks=bool(command and command.all_benchmarks),
                   workflow_ref=default_branch(event, facts))


def group_specs(spec: RunInfo, runners) -> list[RunInfo]:
    """One run of ``spec`` per runner group (``[runners.NAME]``: ``((name, labels), ...)``), measured
    in parallel; the first keeps ``spec.key``, which is the ``group`` of all of them (their shared
    check run's ``external_id``). Without groups, ``[spec]`` as it is."""
    if not runners:
        return [spec]
    return [dataclasses.replace(spec, key=spec.key if i == 0 else run_key(spec.key, name), group=spec.key,
                                runner=name, runs_on=tuple(labels))
            for i, (name, labels) in enumerate(runners)]


def start_runs(spec: RunInfo, runners) -> list[Action]:
    """:class:`~bot.app.core.actions.StartRun` of each of :func:`group_specs`."""
    return [StartRun(s) for s in group_specs(spec, runners)]


def supersede(facts: Facts, reason: str) -> list[Action]:
    """Cancel every active run of the PR (one run per PR at a time; the newest request wins)."""
    return [CancelRun(r.key, reason) for r in facts.runs if r.active]
