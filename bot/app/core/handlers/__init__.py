"""What each webhook means for perfgate: verified event + facts → list of actions (pure).

One module per event holds its handlers and ``facts_for(event)``, the
:class:`~bot.app.core.facts.FactRequest` of what they need besides the payload (the target's
configuration, the sender's permission, the PR as GitHub sees it now, what the App stored). The
shell (``bot.app.job.gather``, ``bot.app.job.effects``) fetches those facts and carries out the
returned ``bot.app.core.actions``. Nothing here does I/O, so every rule below is a unit test with
literal payloads:

- ``pull_request`` ``labeled`` with the trigger label (``[tool.perfgate] label``, default
  ``performance``) by someone with write permission → a run pinned to the PR's head SHA.
- ``synchronize`` / ``reopened`` on a labeled PR → the older runs are superseded (cancelled)
  and a new run starts at the new head; on a fork PR no code runs until a maintainer approves
  the new head (``/perf run``): fork code is only ever dispatched at a SHA a maintainer saw.
- ``unlabeled`` (the trigger label) / ``closed`` → cancel; a merge is recorded for history.
- ``issue_comment`` ``created``/``edited`` on a PR or in an issue, ``commit_comment`` ``created``
  → slash commands (``bot.app.core.commands``; ``/perf bisect`` and a tracking issue's ``/perf
  accept``: ``bot.app.core.handlers.bisect_command``),
  authorised by the collaborator permission API (write, maintain, admin), never by
  ``author_association``, before anything is answered: whatever someone without that
  permission posts (a malformed command included) and whatever label they add, they get one
  reply per PR at most. An edited comment re-runs only if its command changed.
- Approvals bind to what was approved: ``/perf run`` on a fork PR runs only the head named in
  full by ``--sha`` (40 hex digits, never a prefix) and seen by the App in a ``pull_request``
  event dated before the comment, else it is refused with the full SHA to name; ``/perf accept``
  covers the head SHA and the regressed benchmarks of the results reported before the comment.
- ``workflow_run`` ``in_progress`` / ``completed`` of a dispatched run → check run in
  progress / ingest its artifact.
- ``check_run`` ``rerequested`` / ``requested_action`` (``rerun``) → the same run again, once per
  check run (the key comes from the signed payload, not the unsigned delivery id).
- ``check_suite`` ``rerequested`` ("Re-run all checks") → the newest run of the suite's head
  commit again, once per request.
- ``installation*`` → installation rows; ``ping`` → nothing; ``push`` to the default
  branch → a history run of the pushed commit (one per runner group); a history result whose
  series shows a confirmed regression → a bisect and a tracking issue
  (``bot.app.core.regressions``, decided when the run concludes).
- ``labeled``/``/perf run`` on a target with runner groups (``[runners.NAME]``) → one run per
  group, in parallel, with one check run and one comment (a section per group).
"""

from __future__ import annotations

from ..actions import Action, SaveInstallation
from ..events import Event
from ..facts import FactRequest, Facts
from . import (check_run, check_suite, commit_comment, installation, issue_comment, pull_request,  # noqa: F401
               push, repository, workflow_run)
from .routes import Route, routes

# Each module above registers its events on ``routes`` when it is imported, its handler beside
# the facts it declares (``bot.app.core.handlers.routes``): one registration per event.


def route_of(event: Event) -> Route | None:
    """The registered route of ``event`` (its action's, else its event's), or None."""
    return routes.lookup(event.name, event.action)


def facts_for(event: Event) -> FactRequest:
    """Which facts the decision on ``event`` needs (nothing for an event without a repository
    or without a route)."""
    route = route_of(event)
    return route.facts_of(event) if route is not None else FactRequest()


def decide(event: Event, facts: Facts) -> list[Action]:
    """The actions for ``event`` (empty: nothing to do)."""
    route = route_of(event)
    return list(route.decide(event, facts) or []) if route is not None else []


def handled(event_name: str, action: str | None) -> bool:
    """Does perfgate act on this event/action at all? (The intake answers 204 otherwise.)"""
    return routes.lookup(event_name, action) is not None


def relevant(event: Event) -> bool:
    """Could a handler act on this handled delivery? False only when its payload alone shows it
    cannot (a comment that is not a ``/perf`` command): the intake stores nothing for it."""
    route = route_of(event)
    return route is None or route.relevant is None or route.relevant(event)


def needs_installation(actions: list[Action]) -> bool:
    """Do ``actions`` act on GitHub (or as an installation)? All but recording installations do:
    a delivery without an installation id cannot carry them out."""
    return any(not isinstance(a, SaveInstallation) for a in actions)
