"""``issue_comment`` on a PR: the ``/perf`` commands, authorised by the collaborator permission
(``author_association`` only spares asking again about a stranger refused before) before anything
is answered; approvals bind to the head the
maintainer named (a full SHA) and could see when writing the comment (:func:`approval_problem`)."""

from __future__ import annotations

import datetime as _dt

from bot.history.points import parse_time
from .. import messages
from ..actions import (AcceptRegression, Action, React, RememberCommand, RememberRefusal, Reply, ReplyHistory,
                       SavePull, UpsertComment)
from ..commands import Command, CommandError, first_line, is_command, parse
from ..events import Event
from ..facts import FactRequest, Facts, PullInfo, may_command, run_key
from .bisect_command import accept as accept_regression
from .bisect_command import bisect
from .common import default_branch, pr_spec, start_runs, supersede
from .routes import routes


def facts_for(event: Event) -> FactRequest:
    """For a command on a PR: the PR's stored runs, the command last acted on for this comment,
    whether its author was refused before, their permission (not asked again of a stranger refused
    before: ``bot.app.core.facts.wants_permission``), and — when they may command — the target's
    runner groups, the PR as GitHub sees it now with the time its head was first seen, for
    ``accept`` the run concluded before the comment was written, for ``bisect`` where its commits
    stand against the default branch. For a command in an issue: the same but the PR, and the
    regression the issue tracks."""
    issue, comment = event.issue, event.comment
    if not is_command(comment.get("body")):
        return FactRequest()
    login, command = event.commenter, _command(comment.get("body"))
    name, places = (command.name, command.shas) if command else (None, ())
    asked = dict(pr_number=int(issue["number"]), comment_id=int(comment["id"]), refusal_of=login,
                 permission_of=login, config_if_permitted=True, places_of=places,
                 association=comment.get("author_association"))
    if not issue.get("pull_request"):  # an issue: /perf bisect, and /perf accept in a tracking issue
        return FactRequest(**asked, issue_number=int(issue["number"]))
    return FactRequest(**asked, pull_if_permitted=True,
                       concluded_before=written_at(event) if name == "accept" else None)


def relevant(event: Event) -> bool:
    """Could a handler act on this comment? Only a comment whose first line is a ``/perf`` command,
    written by a person, on a PR — or in an issue, one of :data:`ISSUE_COMMANDS`: every other
    comment of an installed repository is answered 204 by the intake and never stored."""
    issue, comment = event.issue, event.comment
    if event.is_bot:
        return False
    body = comment.get("body")
    if not isinstance(body, str) or not is_command(body):
        return False
    return bool(issue.get("pull_request")) or _command_name(body) in ISSUE_COMMANDS


#: The commands perfgate takes in an issue (about the default branch; the others are a PR's).
ISSUE_COMMANDS = ("bisect", "accept", "history", "help")


def _command(body: str | None) -> Command | None:
    try:
        return parse(body)
    except CommandError:
        return None


def _command_name(body: str | None) -> str | None:
    command = _command(body)
    return command.name if command else None


def _comment_actions(event: Event, facts: Facts) -> list[Action]:
    issue, comment = event.issue, event.comment
    if event.is_bot:
        return []  # never answer bots (ourselves included)
    body = comment.get("body") or ""
    repo, number, comment_id = event.repository, int(issue["number"]), int(comment["id"])
    login = event.commenter or "someone"
    if event.action == "edited" and not _command_line_changed(event):
        return []  # the edit did not touch the command line
    if not is_command(body):
        return []
    if not may_command(facts.permission):
        # Before anything is parsed or echoed: one reply per PR, whatever they post.
        if facts.refused_before:
            return []
        return [RememberRefusal(repo, number, login), Reply(repo, number, messages.refusal(login, facts.permission))]
    try:
        command = parse(body)
    except CommandError as exc:
        return [React(repo, number, comment_id, "confused"), Reply(repo, number, messages.command_error(str(exc)))]
    if command is None or (event.action == "edited" and facts.last_command == command.text):
        return []
    if not issue.get("pull_request") and command.name not in ISSUE_COMMANDS:
        return []  # commands of a pull request, written in an issue: nothing to run
    actions: list[Action] = [React(repo, number, comment_id, "eyes"), RememberCommand(repo, comment_id, command.text, login)]
    if command.name == "bisect" or not issue.get("pull_request"):
        return actions + _about_the_default_branch(event, facts, command, number, comment_id, login)
    return actions + _ON_A_PULL_REQUEST[command.name](event, facts, command, number, comment_id,
                                                      login)


def _run(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
         login: str) -> list[Action]:
    """``/perf run`` and ``/perf profile``: the open PR's head, once approved
    (:func:`approval_problem`), compared once per command text and head."""
    repo, pull = event.repository, facts.pull
    if pull is None or pull.state != "open":
        return [Reply(repo, number, messages.NOTHING_TO_BENCHMARK)]
    refused = approval_problem(pull, command, facts.head_seen_at, written_at(event))
    if refused:
        return [React(repo, number, comment_id, "confused"), Reply(repo, number, refused)]
    key = run_key(repo, number, pull.head_sha, "comment", comment_id, command.text)
    if any(r.key == key for r in facts.runs):
        return []  # this exact command at this head was handled already
    return [SavePull(repo, number, {"head_sha": pull.head_sha, "base_sha": pull.base_sha,
                                    "is_fork": pull.is_fork, "approved_sha": pull.head_sha}),
            *supersede(facts, messages.superseded_by_command(command.text, login)),
            *start_runs(pr_spec(event, facts, pull, "command", key, command=command,
                                react_comment_id=comment_id), facts.runners)]


def _cancel(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
            login: str) -> list[Action]:
    """``/perf cancel``: the PR's active runs superseded, said in its comment."""
    repo, reason = event.repository, messages.cancelled_by(login)
    cancels = supersede(facts, reason)
    if not cancels:
        return [Reply(repo, number, messages.nothing_to_cancel())]
    return [*cancels, UpsertComment(repo, number, messages.cancelled(reason)),
            React(repo, number, comment_id, "+1")]


def _accept(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
            login: str) -> list[Action]:
    """``/perf accept``: the regressions of the run concluded before the comment, accepted."""
    repo, seen = event.repository, facts.concluded
    if seen is None or not seen.regressions:
        return [Reply(repo, number, messages.nothing_to_accept(seen.head_sha if seen else None))]
    return [AcceptRegression(repo, number, seen.head_sha, login, command.reason, seen.regressions),
            React(repo, number, comment_id, "+1")]


def _history(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
             login: str) -> list[Action]:
    return [ReplyHistory(event.repository, number, command.benchmark)]


def _help(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
          login: str) -> list[Action]:
    return [Reply(event.repository, number, messages.help_text())]


#: A pull request's commands (``bisect`` is about the default branch): name → its actions after
#: the eyes reaction and the remembered command.
_ON_A_PULL_REQUEST = {"run": _run, "profile": _run, "cancel": _cancel, "accept": _accept,
                      "history": _history, "help": _help}


def _about_the_default_branch(event: Event, facts: Facts, command: Command, number: int, comment_id: int,
                              login: str) -> list[Action]:
    """A command about the default branch (``/perf bisect``; in an issue also ``accept``,
    ``history`` and ``help``, the pull request's ``run``, ``profile`` and ``cancel`` having been
    left alone): ``bot.app.core.handlers.bisect_command``."""
    repo = event.repository
    settings = dict(public_url=facts.public_url, github_url=facts.github_url)
    if command.name == "bisect":
        done = bisect(repository=repo, installation_id=event.installation_id, command=command,
                                     comment_id=comment_id, login=login, facts=facts,
                                     workflow_ref=default_branch(event, facts), **settings)
    elif command.name == "accept":
        done = accept_regression(facts, login, command.reason, **settings)
    elif command.name == "history":
        return [ReplyHistory(repo, number, command.benchmark)]
    else:
        return [Reply(repo, number, messages.help_text())]
    if isinstance(done, str):
        return [React(repo, number, comment_id, "confused"), Reply(repo, number, done)]
    return [*done, React(repo, number, comment_id, "rocket" if command.name == "bisect" else "+1")]


def written_at(event: Event) -> _dt.datetime | None:
    """When the comment's text was written: ``updated_at`` of an edit, else ``created_at``
    (signed payload fields; None when absent)."""
    comment = event.comment
    return parse_time(comment.get("updated_at") if event.action == "edited" else comment.get("created_at"))


def approval_problem(pull: PullInfo, command: Command, head_seen_at: _dt.datetime | None,
                     written: _dt.datetime | None) -> str | None:
    """Why ``command`` may not run ``pull``'s current head (None: it may).

    ``--sha`` (a full SHA, ``bot.app.core.commands``) must equal the head. A fork PR's head must
    moreover be named with ``--sha`` *and* have been seen by the App (a ``pull_request`` event)
    strictly before the comment was written:

    - a comment does not say which commit its writer reviewed, and the App cannot prove that it
      saw every push before the comment: deliveries arrive late, fail and are retried out of
      order, so a head it saw before the comment may have been followed by one it never saw,
      which the maintainer reviewed, and then pushed back (review N7) — without ``--sha`` a
      fork's run is refused;
    - a SHA seen as the head before the comment was there to review; a full SHA of a commit
      never shown in the PR (one its author announced and pushes later) was not (N2).

    Heads of PRs from the repository itself are pushed by people with write access and need
    no such proof.
    """
    if command.sha and pull.head_sha.lower() != command.sha:
        return messages.head_moved(pull.head_sha, f"`{command.sha}` is not the head of this pull request")
    if not pull.is_fork:
        return None
    if not command.sha:
        return messages.head_moved(pull.head_sha, "this pull request comes from a fork, and a comment without "
                                                  "`--sha` does not say which commit you reviewed")
    if head_seen_at is None or written is None or not head_seen_at < written:
        return messages.head_moved(pull.head_sha, "perfgate cannot tell that this head was there when you wrote "
                                                  "the command (it was pushed after it, or its `pull_request` event "
                                                  "has not reached perfgate yet: comment again in a minute)")
    return None


def _command_line_changed(event: Event) -> bool:
    """For ``edited``: did the first line change? (True when GitHub sent no previous body.)"""
    body_change = event.changes.get("body")
    if not isinstance(body_change, dict) or "from" not in body_change:
        return True
    return first_line(body_change.get("from")) != first_line(event.comment.get("body"))


routes.on("issue_comment", "created", facts=facts_for, relevant=relevant)(_comment_actions)
routes.on("issue_comment", "edited", facts=facts_for, relevant=relevant)(_comment_actions)
