"""``/perf bisect`` and, in a regression's tracking issue, ``/perf accept``: what a maintainer's
command about the default branch asks for (pure; ``issue_comment`` in an issue or a pull request,
``commit_comment`` on a commit call it once the sender may command perfgate).

- ``/perf bisect GOOD BAD [BENCH] [--runner NAME]`` (``GOOD`` alone on a commit, which is ``BAD``),
  both commits of the default branch's history (:func:`outside_history`): a regression to track
  from the command (its key: the comment), bisected on runner group
  ``NAME`` (a configured one; default none: the workflow's own runners) for ``BENCH`` (default:
  the clearest regression between the two), with its tracking issue;
- ``/perf bisect`` in a tracking issue: that regression bisected again (a new bisect run, keyed by
  the comment, which the regression now follows);
- ``/perf accept [REASON]`` in a tracking issue: the regression closed as accepted.
"""

from __future__ import annotations

from .. import messages, regressions
from ..actions import Action, RegressionSpec, SaveRegression, StartRun
from ..commands import Command
from ..facts import Facts, run_key

def bisect(*, repository: str, installation_id: int | None, command: Command, comment_id: int, login: str,
           facts: Facts, workflow_ref: str | None, public_url: str | None, github_url: str,
           commit: str | None = None) -> list[Action] | str:
    """The actions of ``/perf bisect`` (``commit``: the commit it was written on), or the reason
    (Markdown) it cannot be taken."""
    shas = list(command.shas) + ([commit] if commit else [])
    if not shas and facts.regression is not None:
        r = facts.regression
        key = regressions.bisect_key(r.key, comment_id)
        return [StartRun(regressions.bisect_spec(r, key, trigger="command", workflow_ref=workflow_ref,
                                                 requested_by=login)),
                SaveRegression(r.key, {"bisect_key": key} if r.closed else {"bisect_key": key, "status": "open"})]
    if len(shas) != 2:
        return messages.BISECT_NEEDS_RANGE
    runner, labels = None, ()
    if command.runner is not None:
        groups = dict(facts.runners)
        if command.runner not in groups:
            return messages.not_a_runner_group(command.runner, groups)
        runner, labels = command.runner, tuple(groups[command.runner])
    outside = outside_history(shas, facts.places)
    if outside:
        return messages.bisect_outside_history(outside)
    good, bad = shas
    spec = RegressionSpec(key=run_key(repository, "command", comment_id, command.text), repository=repository,
                          installation_id=installation_id, benchmark=command.benchmark or "", good_sha=good,
                          bad_sha=bad, trigger="command", runner=runner, runs_on=labels, requested_by=login)
    return regressions.open_regression(spec, workflow_ref=workflow_ref, public_url=public_url, github_url=github_url)


#: GitHub's compare status of ``DEFAULT_BRANCH...SHA`` for a commit in the branch's history.
IN_HISTORY = ("behind", "identical")


def outside_history(shas, places: dict[str, str | None]) -> list[str]:
    """The commits of ``shas`` that are not in the default branch's history as ``places``
    (``Facts.places``: GitHub's compare status of each) tells, each once: a bisect builds and runs
    every commit between GOOD and BAD, so both must be commits the repository merged — never a
    fork's commits nobody reviewed (security review 2026-12-06, P5), nor one GitHub does not
    know."""
    return [sha for sha in dict.fromkeys(shas) if places.get(sha) not in IN_HISTORY]


def accept(facts: Facts, login: str, reason: str | None, *, public_url: str | None, github_url: str) -> list[Action] | str:
    """``/perf accept`` in a tracking issue: the regression closed as accepted, or why not."""
    r = facts.regression
    if r is None:
        return messages.NOT_A_TRACKING_ISSUE
    if r.closed:
        return messages.closed_already(r.closed_reason)
    why = f": {reason}" if reason else ""
    return regressions.close_regression(r, f"accepted by @{login}{why}", "not_planned", public_url=public_url,
                                        github_url=github_url)
