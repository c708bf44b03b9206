"""``pull_request``: the trigger label starts a run at the PR's head (one per runner group of the
configuration, in parallel); new commits supersede it (a fork's new head waits for a maintainer's
approval); unlabeling or closing cancels; a merge is recorded for the history."""

from __future__ import annotations

from .. import messages
from ..actions import Action, RecordMerge, RememberRefusal, Reply, SavePull, UpsertComment
from ..events import Event
from ..facts import FactRequest, Facts, PullInfo, may_command, pull_from_payload, run_key
from .common import pr_spec, start_runs, supersede
from .routes import routes


def facts_for(event: Event) -> FactRequest:
    """The PR's stored runs and approval, whether the sender was refused before, for ``labeled``
    the sender's permission, and the target's configuration (its trigger label) when it can
    matter: a label added or removed, or a PR that has labels — a fork's new PRs and its pushes
    to an unlabeled one cost no GitHub call (security review 2026-12-06, P4)."""
    number = int(event.pull_request["number"])
    labels = event.action in ("labeled", "unlabeled") or bool(event.pull_request.get("labels"))
    return FactRequest(pr_number=number, config=labels, approved_sha=True,
                       refusal_of=event.sender or None,
                       permission_of=event.sender if event.action == "labeled" and event.sender else None)


def _auto_run(event: Event, facts: Facts, pull: PullInfo, trigger: str) -> list[Action]:
    """A run for the PR's current head from a label/synchronize/reopen, unless this head was
    measured (or is being measured) already; a run that failed to start or to report results
    does not count, so labeling again retries it."""
    if any(r.head_sha == pull.head_sha and r.measured for r in facts.runs):
        return []
    attempt = sum(1 for r in facts.runs if r.head_sha == pull.head_sha)
    key = run_key(event.repository, pull.number, pull.head_sha, "auto", attempt)
    actions: list[Action] = supersede(facts, messages.superseded_by_push(pull.head_sha))
    actions += start_runs(pr_spec(event, facts, pull, trigger, key), facts.runners)
    return actions


@routes.on("pull_request", "labeled", facts=facts_for)
def on_labeled(event: Event, facts: Facts) -> list[Action]:
    label = event.label
    if label != facts.label:
        return []
    pull = pull_from_payload(event.pull_request)
    if pull.state != "open":
        return []
    if not may_command(facts.permission):
        # Triage users can label; the label alone must not run (fork) code on the GPU runners.
        return _refuse_once(event, facts, pull.number, messages.label_refusal(event.sender or "someone", label))
    if pull.is_fork and facts.approved_sha != pull.head_sha:
        # a label names no commit: on a fork it approves whatever the head is when it lands, and
        # a force-push two seconds before was dispatched (security review 2026-12-06, P2); the
        # head the maintainer reviewed is approved by naming it, /perf run --sha
        return [SavePull(event.repository, pull.number, {"labeled": True, **pull.tracked()}),
                UpsertComment(event.repository, pull.number,
                              messages.fork_needs_approval(pull.head_sha, labeled=True))]
    save = SavePull(event.repository, pull.number, {"labeled": True, **pull.tracked(), "approved_sha": pull.head_sha})
    return [save, *_auto_run(event, facts, pull, "label")]


def _refuse_once(event: Event, facts: Facts, number: int, body: str) -> list[Action]:
    """The one reply per PR that someone without write permission gets, whatever they do."""
    if facts.refused_before or not event.sender:
        return []
    return [RememberRefusal(event.repository, number, event.sender), Reply(event.repository, number, body)]


@routes.on("pull_request", "opened", facts=facts_for)
def on_opened(event: Event, facts: Facts) -> list[Action]:
    """Record the head (and when GitHub saw it), so a later ``/perf run`` can tell whether the
    maintainer could have seen it."""
    pull = pull_from_payload(event.pull_request)
    return [SavePull(event.repository, pull.number, {**pull.tracked(), "labeled": facts.label in pull.labels})]


@routes.on("pull_request", "synchronize", facts=facts_for)
def on_synchronize(event: Event, facts: Facts) -> list[Action]:
    pull = pull_from_payload(event.pull_request)
    labeled = facts.label in pull.labels
    actions: list[Action] = [SavePull(event.repository, pull.number, {**pull.tracked(), "labeled": labeled})]
    if not labeled:
        return actions
    if pull.is_fork and facts.approved_sha != pull.head_sha:
        actions += supersede(facts, messages.fork_pushed(pull.head_sha))
        actions.append(UpsertComment(event.repository, pull.number, messages.fork_needs_approval(pull.head_sha)))
        return actions
    return actions + _auto_run(event, facts, pull, "synchronize")


@routes.on("pull_request", "reopened", facts=facts_for)
def on_reopened(event: Event, facts: Facts) -> list[Action]:
    pull = pull_from_payload(event.pull_request)
    if facts.label not in pull.labels:
        return []
    save = SavePull(event.repository, pull.number, pull.tracked())
    if pull.is_fork and facts.approved_sha != pull.head_sha:
        return [save, UpsertComment(event.repository, pull.number, messages.fork_needs_approval(pull.head_sha))]
    return [save, *_auto_run(event, facts, pull, "reopened")]


@routes.on("pull_request", "unlabeled", facts=facts_for)
def on_unlabeled(event: Event, facts: Facts) -> list[Action]:
    if event.label != facts.label:
        return []
    number = int(event.pull_request["number"])
    actions: list[Action] = [SavePull(event.repository, number, {"labeled": False})]
    reason = messages.label_removed(facts.label, event.sender)
    return actions + _cancel_all(event, facts, number, reason)


def _cancel_all(event: Event, facts: Facts, number: int, reason: str) -> list[Action]:
    """Cancel the PR's active runs for ``reason`` (Markdown), and say so in its comment."""
    cancels = supersede(facts, reason)
    if not cancels:
        return []
    return [*cancels, UpsertComment(event.repository, number, messages.cancelled(reason))]


@routes.on("pull_request", "closed", facts=facts_for)
def on_closed(event: Event, facts: Facts) -> list[Action]:
    pr = event.pull_request
    number = int(pr["number"])
    actions: list[Action] = []
    if pr.get("merged"):
        actions.append(RecordMerge(event.repository, number, pr.get("merge_commit_sha"), pr.get("merged_at"),
                                   pr.get("html_url"), pr.get("title"), (pr.get("head") or {}).get("sha")))
    return actions + _cancel_all(event, facts, number, messages.PULL_CLOSED)
