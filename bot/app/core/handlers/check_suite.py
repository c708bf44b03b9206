"""``check_suite`` ``rerequested`` ("Re-run all checks" on a PR): perfgate's check runs again,
as for a check run's "Re-run" (:func:`bot.app.core.handlers.check_run.rerun`): the newest run of the
suite's head commit, once per request (keyed by the suite's id and its signed ``updated_at``).

GitHub sends this only for suites of the App's own check runs, and only people with write
access can press the button. ``check_suite.pull_requests`` is empty for pull requests from
forks, so the run is found by the suite's head SHA, not by PR number.
"""

from __future__ import annotations

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts, run_key
from .check_run import rerun
from .routes import routes


def facts_for(event: Event) -> FactRequest:
    """The runs stored for the suite's head commit (``Facts.runs``)."""
    return FactRequest(head_sha=str(event.check_suite.get("head_sha") or "") or None)


@routes.on("check_suite", "rerequested", facts=facts_for)
def on_check_suite_rerequested(event: Event, facts: Facts) -> list[Action]:
    suite = event.check_suite
    head = suite.get("head_sha")
    ours = [r for r in facts.runs if r.head_sha == head and r.kind == "pr"]
    if not ours:
        return []  # no perfgate run for this commit: nothing to re-run
    newest = ours[-1]
    others = Facts(runs=tuple(r for r in facts.runs if r.pr_number == newest.pr_number))
    key = run_key(event.repository, "check_suite", suite.get("id"), event.action, suite.get("updated_at"))
    return rerun(event, others, newest, key)
