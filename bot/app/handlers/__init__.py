"""What each webhook means for perfgate: verified event + facts → list of actions (pure).

One module per event holds its handlers and ``facts_for(event)``, the
:class:`~bot.app.facts.FactRequest` of what they need besides the payload (the target's
configuration, the sender's permission, the PR as GitHub sees it now, what the App stored). The
shell (``bot.app.executor``) fetches those facts and carries out the returned
``bot.app.actions``. Nothing here does I/O, so every rule below is a unit test with literal
payloads:

- ``pull_request`` ``labeled`` with the trigger label (``[tool.perfgate] label``, default
  ``performance``) by someone with write permission → a run pinned to the PR's head SHA.
- ``synchronize`` / ``reopened`` on a labeled PR → the older runs are superseded (cancelled)
  and a new run starts at the new head; on a fork PR no code runs until a maintainer approves
  the new head (``/perf run``): fork code is only ever dispatched at a SHA a maintainer saw.
- ``unlabeled`` (the trigger label) / ``closed`` → cancel; a merge is recorded for history.
- ``issue_comment`` ``created``/``edited`` on a PR or in an issue, ``commit_comment`` ``created``
  → slash commands (``bot.app.commands``; ``/perf bisect`` and a tracking issue's ``/perf accept``:
  ``bot.app.handlers.bisect_command``),
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
  series shows a confirmed regression → a bisect and a tracking issue (``bot.app.regressions``,
  decided when the run concludes).
- ``labeled``/``/perf run`` on a target with runner groups (``[runners.NAME]``) → one run per
  group, in parallel, with one check run and one comment (a section per group).
"""

from __future__ import annotations

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts
from . import (check_run, check_suite, commit_comment, installation, issue_comment, pull_request, push, repository,
               workflow_run)
from .common import router

#: Each event's declaration of the facts its handlers need.
_FACTS_FOR = {"pull_request": pull_request.facts_for, "issue_comment": issue_comment.facts_for,
              "workflow_run": workflow_run.facts_for, "check_run": check_run.facts_for,
              "check_suite": check_suite.facts_for, "push": push.facts_for,
              "installation": installation.facts_for, "installation_repositories": installation.facts_for,
              "ping": installation.facts_for, "repository": repository.facts_for,
              "commit_comment": commit_comment.facts_for}


def facts_for(event: Event) -> FactRequest:
    """Which facts the decision on ``event`` needs (nothing for an event without a repository)."""
    declare = _FACTS_FOR.get(event.name)
    return declare(event) if declare is not None and event.repository else FactRequest()


def decide(event: Event, facts: Facts) -> list[Action]:
    """The actions for ``event`` (empty: nothing to do)."""
    result = router.dispatch(event, facts)
    return list(result or [])


def handled(event_name: str, action: str | None) -> bool:
    """Does perfgate act on this event/action at all? (The intake answers 204 otherwise.)"""
    return router.handles(event_name, action)


#: Events whose payload alone shows that no handler would act (``relevant(event)``).
_RELEVANT = {"issue_comment": issue_comment.relevant, "commit_comment": commit_comment.relevant}


def relevant(event: Event) -> bool:
    """Could a handler act on this handled delivery? False only when its payload alone shows it
    cannot (a comment that is not a ``/perf`` command): the intake stores nothing for it."""
    check = _RELEVANT.get(event.name)
    return check(event) if check is not None else True
