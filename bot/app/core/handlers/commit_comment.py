"""``commit_comment`` ``created``: ``/perf bisect GOOD [BENCH] [--runner NAME]`` written on a commit
of the default branch bisects ``GOOD``..that commit (``bot.app.core.handlers.bisect_command``),
authorised by the collaborator permission like every command.

perfgate cannot answer on a commit (a commit comment needs the App to hold ``contents: write``,
which would let it push code; it holds ``contents: read``): the regression's tracking issue, which
names the maintainer, is the answer, and a command it cannot take is only logged.
"""

from __future__ import annotations

import logging

from ..actions import Action
from ..commands import CommandError, is_command, parse
from ..events import Event
from ..facts import FactRequest, Facts, may_command
from .bisect_command import bisect
from .common import default_branch
from .routes import routes

log = logging.getLogger("perfgate.bot")


def facts_for(event: Event) -> FactRequest:
    """For a ``/perf`` command: its author's permission, the target's runner groups and, for
    ``bisect``, where its commits (the one it was written on included) stand against the default
    branch."""
    if not is_command(event.comment.get("body")):
        return FactRequest()
    try:
        command = parse(event.comment.get("body"))
    except CommandError:
        command = None
    commit = str(event.comment.get("commit_id") or "").lower()
    places = (*command.shas, commit) if command is not None and command.name == "bisect" else ()
    return FactRequest(permission_of=event.commenter, config=True, places_of=places)


def relevant(event: Event) -> bool:
    """Only a person's comment whose first line is a ``/perf`` command is stored."""
    body = event.comment.get("body")
    return not event.is_bot and isinstance(body, str) and is_command(body)


@routes.on("commit_comment", "created", facts=facts_for, relevant=relevant)
def on_commit_comment(event: Event, facts: Facts) -> list[Action]:
    comment = event.comment
    if not relevant(event) or not may_command(facts.permission):
        return []
    try:
        command = parse(comment.get("body"))
    except CommandError as exc:
        log.info("%s: a commit comment's command cannot be taken: %s", event.repository, exc)
        return []
    if command is None or command.name != "bisect":
        return []
    login = event.commenter or "someone"
    done = bisect(repository=event.repository, installation_id=event.installation_id, command=command,
                                 comment_id=int(comment["id"]), login=login, facts=facts,
                                 workflow_ref=default_branch(event, facts), public_url=facts.public_url,
                                 github_url=facts.github_url, commit=str(comment.get("commit_id") or "").lower())
    if isinstance(done, str):
        log.info("%s: a commit comment's /perf bisect cannot be taken: %s", event.repository, done)
        return []
    return done
