"""What each webhook means for perfgate: verified event + facts → list of actions (pure).

The shell (``bot.app.executor``) gathers the :class:`Facts` an event needs (the target's
configuration, the sender's permission, the PR as GitHub sees it now, what the App stored)
and carries out the returned ``bot.app.actions``. Nothing here does I/O, so every rule below is a
unit test with literal payloads:

- ``pull_request`` ``labeled`` with the trigger label (``[tool.perfgate] label``, default
  ``performance``) by someone with write permission → a run pinned to the PR's head SHA.
- ``synchronize`` / ``reopened`` on a labeled PR → the older runs are superseded (cancelled)
  and a new run starts at the new head; on a fork PR no code runs until a maintainer approves
  the new head (``/perf run``): fork code is only ever dispatched at a SHA a maintainer saw.
- ``unlabeled`` (the trigger label) / ``closed`` → cancel; a merge is recorded for history.
- ``issue_comment`` ``created``/``edited`` on a PR → slash commands (``bot.app.commands``),
  authorised by the collaborator permission API (write, maintain, admin), never by
  ``author_association``, before anything is answered: whatever someone without that
  permission posts (a malformed command included) and whatever label they add, they get one
  reply per PR at most. An edited comment re-runs only if its command changed.
- Approvals bind to what was approved: ``/perf run`` on a fork PR runs the head the
  maintainer could see when writing the comment (a head the App saw in a ``pull_request``
  event dated before it, or the one named by ``--sha``), else it is refused; ``/perf accept``
  covers the head SHA and the regressed benchmarks of the results reported before the comment.
- ``workflow_run`` ``in_progress`` / ``completed`` of a dispatched run → check run in
  progress / ingest its artifact.
- ``check_run`` ``rerequested`` / ``requested_action`` (``rerun``) → the same run again, once per
  check run (the key comes from the signed payload, not the unsigned delivery id).
- ``installation*`` → installation rows; ``ping`` → nothing; ``push`` to the default
  branch → a history run of the pushed commit.
"""

from __future__ import annotations

import datetime as _dt

from ..history.core import parse_time
from . import messages
from .actions import (AcceptRegression, Action, CancelRun, Ingest, MarkInProgress, React, RecordMerge, RememberCommand,
                      RememberRefusal, Reply, ReplyHistory, RunSpec, SaveInstallation, SavePull, StartRun,
                      UpsertComment)
from .commands import Command, CommandError, first_line, is_command, parse
from .events import Event, Router
from .facts import Facts, PullInfo, may_command, pull_from_payload, run_key

ZERO_SHA = "0" * 40
RERUN_ACTION = "rerun"


router = Router()


def decide(event: Event, facts: Facts) -> list[Action]:
    """The actions for ``event`` (empty: nothing to do)."""
    result = router.dispatch(event, facts)
    return list(result or [])


def handled(event_name: str, action: str | None) -> bool:
    """Does perfgate act on this event/action at all? (The intake answers 204 otherwise.)"""
    return router.handles(event_name, action)


# -- helpers ------------------------------------------------------------------------------------
def _installation(event: Event) -> int | None:
    return event.installation_id


def _default_branch(event: Event, facts: Facts) -> str | None:
    return (event.data.get("repository") or {}).get("default_branch") or facts.default_branch


def dispatch_inputs(spec: RunSpec) -> dict[str, str]:
    """The ``workflow_dispatch`` inputs of a run (examples/workflows/perfgate.yml): the exact
    SHAs, the PR number and the run id always; ``filter``, ``rounds``, ``threshold`` and
    ``profile`` only when the command set them (GitHub rejects inputs a workflow does not
    declare, so a plain run works with the minimal workflow)."""
    inputs = {"base-sha": spec.base_sha or spec.head_sha, "head-sha": spec.head_sha, "run-id": spec.key}
    if spec.pr_number is not None:
        inputs["pr-number"] = str(spec.pr_number)
    if spec.filter:
        inputs["filter"] = spec.filter
    if spec.rounds:
        inputs["rounds"] = str(spec.rounds)
    if spec.threshold:
        inputs["threshold"] = f"{spec.threshold:g}"
    if spec.profile:
        inputs["profile"] = "true"
    return inputs


def _pr_spec(event: Event, facts: Facts, pull: PullInfo, trigger: str, key: str, *,
             command: Command | None = None, react_comment_id: int | None = None) -> RunSpec:
    return RunSpec(key=key, repository=event.repository or "", installation_id=_installation(event), kind="pr",
                   trigger=trigger, head_sha=pull.head_sha, base_sha=pull.base_sha, pr_number=pull.number,
                   head_ref=pull.head_ref, base_ref=pull.base_ref, requested_by=event.sender,
                   filter=command.filter if command else None, rounds=command.rounds if command else None,
                   threshold=command.threshold if command else None,
                   profile=bool(command and command.name == "profile"), react_comment_id=react_comment_id,
                   workflow_ref=_default_branch(event, facts))


def _supersede(facts: Facts, reason: str) -> list[Action]:
    """Cancel every active run of the PR (one run per PR at a time; the newest request wins)."""
    return [CancelRun(r.key, reason) for r in facts.runs if r.active]


def _auto_run(event: Event, facts: Facts, pull: PullInfo, trigger: str) -> list[Action]:
    """A run for the PR's current head from a label/synchronize/reopen, unless this head was
    measured (or is being measured) already."""
    if any(r.head_sha == pull.head_sha and r.status in ("queued", "in_progress", "completed") for r in facts.runs):
        return []
    attempt = sum(1 for r in facts.runs if r.head_sha == pull.head_sha)
    key = run_key(event.repository, pull.number, pull.head_sha, "auto", attempt)
    actions: list[Action] = _supersede(facts, f"Superseded by a new run at `{messages.short(pull.head_sha)}`.")
    actions.append(StartRun(_pr_spec(event, facts, pull, trigger, key)))
    return actions


# -- pull_request -------------------------------------------------------------------------------
@router.register("pull_request", action="labeled")
def on_labeled(event: Event, facts: Facts) -> list[Action]:
    label = (event.data.get("label") or {}).get("name")
    if label != facts.label:
        return []
    pull = pull_from_payload(event.data["pull_request"])
    if pull.state != "open":
        return []
    if not may_command(facts.permission):
        # Triage users can label; the label alone must not run (fork) code on the GPU runners.
        return _refuse_once(event, facts, pull.number, messages.label_refusal(event.sender or "someone", label))
    save = SavePull(event.repository, pull.number, {"labeled": True, **pull.tracked(), "approved_sha": pull.head_sha})
    return [save, *_auto_run(event, facts, pull, "label")]


def _refuse_once(event: Event, facts: Facts, number: int, body: str) -> list[Action]:
    """The one reply per PR that someone without write permission gets, whatever they do."""
    if facts.refused_before or not event.sender:
        return []
    return [RememberRefusal(event.repository, number, event.sender), Reply(event.repository, number, body)]


@router.register("pull_request", action="opened")
def on_opened(event: Event, facts: Facts) -> list[Action]:
    """Record the head (and when GitHub saw it), so a later ``/perf run`` can tell whether the
    maintainer could have seen it."""
    pull = pull_from_payload(event.data["pull_request"])
    return [SavePull(event.repository, pull.number, {**pull.tracked(), "labeled": facts.label in pull.labels})]


@router.register("pull_request", action="synchronize")
def on_synchronize(event: Event, facts: Facts) -> list[Action]:
    pull = pull_from_payload(event.data["pull_request"])
    labeled = facts.label in pull.labels
    actions: list[Action] = [SavePull(event.repository, pull.number, {**pull.tracked(), "labeled": labeled})]
    if not labeled:
        return actions
    if pull.is_fork and facts.approved_sha != pull.head_sha:
        actions += _supersede(facts, f"New commits were pushed to the fork (head `{messages.short(pull.head_sha)}`).")
        actions.append(UpsertComment(event.repository, pull.number, messages.fork_needs_approval(pull.head_sha)))
        return actions
    return actions + _auto_run(event, facts, pull, "synchronize")


@router.register("pull_request", action="reopened")
def on_reopened(event: Event, facts: Facts) -> list[Action]:
    pull = pull_from_payload(event.data["pull_request"])
    if facts.label not in pull.labels:
        return []
    save = SavePull(event.repository, pull.number, pull.tracked())
    if pull.is_fork and facts.approved_sha != pull.head_sha:
        return [save, UpsertComment(event.repository, pull.number, messages.fork_needs_approval(pull.head_sha))]
    return [save, *_auto_run(event, facts, pull, "reopened")]


@router.register("pull_request", action="unlabeled")
def on_unlabeled(event: Event, facts: Facts) -> list[Action]:
    if (event.data.get("label") or {}).get("name") != facts.label:
        return []
    number = int(event.data["pull_request"]["number"])
    actions: list[Action] = [SavePull(event.repository, number, {"labeled": False})]
    cancels = _supersede(facts, f"The `{facts.label}` label was removed by @{event.sender}.")
    if cancels:
        actions += cancels
        actions.append(UpsertComment(event.repository, number,
                                     messages.cancelled(f"The `{facts.label}` label was removed by @{event.sender}.")))
    return actions


@router.register("pull_request", action="closed")
def on_closed(event: Event, facts: Facts) -> list[Action]:
    pr = event.data["pull_request"]
    number = int(pr["number"])
    actions: list[Action] = []
    if pr.get("merged"):
        actions.append(RecordMerge(event.repository, number, pr.get("merge_commit_sha"), pr.get("merged_at"),
                                   pr.get("html_url"), pr.get("title"), (pr.get("head") or {}).get("sha")))
    cancels = _supersede(facts, "The pull request was closed.")
    if cancels:
        actions += cancels
        actions.append(UpsertComment(event.repository, number, messages.cancelled("The pull request was closed.")))
    return actions


# -- issue_comment ------------------------------------------------------------------------------
def _comment_actions(event: Event, facts: Facts) -> list[Action]:
    issue = event.data.get("issue") or {}
    comment = event.data.get("comment") or {}
    if not issue.get("pull_request"):
        return []  # a plain issue, not a PR
    if (comment.get("user") or {}).get("type") == "Bot" or (event.data.get("sender") or {}).get("type") == "Bot":
        return []  # never answer bots (ourselves included)
    body = comment.get("body") or ""
    repo, number, comment_id = event.repository, int(issue["number"]), int(comment["id"])
    login = (comment.get("user") or {}).get("login") or event.sender or "someone"
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
    actions: list[Action] = [React(repo, number, comment_id, "eyes"), RememberCommand(repo, comment_id, command.text, login)]
    pull = facts.pull
    if command.name in ("run", "profile"):
        if pull is None or pull.state != "open":
            return actions + [Reply(repo, number, "This pull request is closed; there is nothing to benchmark.")]
        refused = approval_problem(pull, command, facts.head_seen_at, written_at(event))
        if refused:
            return actions + [React(repo, number, comment_id, "confused"), Reply(repo, number, refused)]
        key = run_key(repo, number, pull.head_sha, "comment", comment_id, command.text)
        if any(r.key == key for r in facts.runs):
            return actions  # this exact command at this head was handled already
        actions.append(SavePull(repo, number, {"head_sha": pull.head_sha, "base_sha": pull.base_sha,
                                               "is_fork": pull.is_fork, "approved_sha": pull.head_sha}))
        actions += _supersede(facts, messages.superseded_by_command(command.text, login))
        actions.append(StartRun(_pr_spec(event, facts, pull, "command", key, command=command,
                                         react_comment_id=comment_id)))
    elif command.name == "cancel":
        cancels = _supersede(facts, f"Cancelled by @{login} (`/perf cancel`).")
        if not cancels:
            return actions + [Reply(repo, number, messages.nothing_to_cancel())]
        actions += cancels
        actions.append(UpsertComment(repo, number, messages.cancelled(f"Cancelled by @{login} (`/perf cancel`).")))
        actions.append(React(repo, number, comment_id, "+1"))
    elif command.name == "accept":
        seen = facts.concluded
        if seen is None or not seen.regressions:
            return actions + [Reply(repo, number, messages.nothing_to_accept(seen.head_sha if seen else None))]
        actions += [AcceptRegression(repo, number, seen.head_sha, login, command.reason, seen.regressions),
                    React(repo, number, comment_id, "+1")]
    elif command.name == "history":
        actions.append(ReplyHistory(repo, number, command.benchmark))
    else:  # help
        actions.append(Reply(repo, number, messages.help_text()))
    return actions


def written_at(event: Event) -> _dt.datetime | None:
    """When the comment's text was written: ``updated_at`` of an edit, else ``created_at``
    (signed payload fields; None when absent)."""
    comment = event.data.get("comment") or {}
    return parse_time(comment.get("updated_at") if event.action == "edited" else comment.get("created_at"))


def approval_problem(pull: PullInfo, command: Command, head_seen_at: _dt.datetime | None,
                     written: _dt.datetime | None) -> str | None:
    """Why ``command`` may not run ``pull``'s current head (None: it may).

    ``--sha`` must name the head. Without it a fork PR's head must have been seen by the App
    (a ``pull_request`` event) strictly before the comment was written: a head pushed after the
    comment (or in the same second) was not what the maintainer approved. Heads of PRs from
    the repository itself are pushed by people with write access and need no such proof.
    """
    if command.sha:
        if not pull.head_sha.lower().startswith(command.sha.lower()):
            return messages.head_moved(pull.head_sha, f"`{command.sha}` is not the head of this pull request")
        return None
    if not pull.is_fork:
        return None
    if head_seen_at is None or written is None or not head_seen_at < written:
        return messages.head_moved(pull.head_sha, "perfgate cannot tell that this head was there when you wrote "
                                                  "the command (it was pushed after it, or perfgate never saw it)")
    return None


def _command_line_changed(event: Event) -> bool:
    """For ``edited``: did the first line change? (True when GitHub sent no previous body.)"""
    body_change = (event.data.get("changes") or {}).get("body")
    if not isinstance(body_change, dict) or "from" not in body_change:
        return True
    return first_line(body_change.get("from")) != first_line((event.data.get("comment") or {}).get("body"))


router.register("issue_comment", action="created")(_comment_actions)
router.register("issue_comment", action="edited")(_comment_actions)


# -- workflow_run / check_run -------------------------------------------------------------------
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


def _rerun(event: Event, facts: Facts) -> list[Action]:
    if event.action == "requested_action" and (event.data.get("requested_action") or {}).get("identifier") != RERUN_ACTION:
        return []
    run = facts.run
    if run is None:
        return []
    # Signed content only: replaying a captured delivery with a new X-GitHub-Delivery id gives
    # the same key, so it starts nothing new. Re-run the newest check run to run again.
    check_run_id = (event.data.get("check_run") or {}).get("id")
    key = run_key(event.repository, run.key, "rerun", check_run_id, event.action,
                  (event.data.get("requested_action") or {}).get("identifier"))
    if any(r.key == key for r in facts.runs):
        return []
    spec = RunSpec(key=key, repository=event.repository or "", installation_id=_installation(event), kind=run.kind,
                   trigger="rerun", head_sha=run.head_sha, base_sha=run.base_sha, pr_number=run.pr_number,
                   head_ref=run.head_ref, base_ref=run.base_ref, requested_by=event.sender, filter=run.filter,
                   rounds=run.rounds, threshold=run.threshold, profile=run.profile,
                   workflow_ref=_default_branch(event, facts))
    return [*_supersede(facts, "Superseded by a re-run."), StartRun(spec)]


router.register("check_run", action="rerequested")(_rerun)
router.register("check_run", action="requested_action")(_rerun)


# -- installation, ping, push -------------------------------------------------------------------
def _installation_actions(event: Event, facts: Facts) -> list[Action]:
    inst = event.data.get("installation") or {}
    if not isinstance(inst.get("id"), int):
        return []
    account = (inst.get("account") or {}).get("login")
    active = event.action not in ("deleted", "suspend")
    return [SaveInstallation(int(inst["id"]), account, active)]


router.register("installation")(_installation_actions)
router.register("installation_repositories")(_installation_actions)


@router.register("ping")
def on_ping(event: Event, facts: Facts) -> list[Action]:
    return []


@router.register("repository", action="privatized")
@router.register("repository", action="publicized")
def on_visibility(event: Event, facts: Facts) -> list[Action]:
    """Nothing to do but what every delivery does: record the repository's visibility (the
    executor, for ``bot.app.access``)."""
    return []


@router.register("push")
def on_push(event: Event, facts: Facts) -> list[Action]:
    data = event.data
    default = (data.get("repository") or {}).get("default_branch") or facts.default_branch
    after, before = data.get("after") or ZERO_SHA, data.get("before") or ZERO_SHA
    if data.get("ref") != f"refs/heads/{default}" or data.get("deleted") or after == ZERO_SHA:
        return []
    key = run_key(event.repository, "push", after)
    if any(r.key == key for r in facts.runs):
        return []
    spec = RunSpec(key=key, repository=event.repository or "", installation_id=_installation(event),
                   kind="history", trigger="push", head_sha=after,
                   base_sha=None if before == ZERO_SHA else before, head_ref=default, base_ref=default,
                   requested_by=event.sender, workflow_ref=default)
    return [StartRun(spec)]
