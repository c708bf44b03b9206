"""The App's shell decides nothing: every branch of its modules (``if``, ``elif``, conditional
expressions, ``match``, ``while`` and comprehension conditions) tests an I/O outcome — a value
the store or GitHub did not return (``is None``), an exception's kind, the retry counters — or
follows what the core decided or the facts the core declared; any other branch is a decision
in the shell and must move to the core (``bot.app.core.facts``, ``bot.app.core.conclude``,
``bot.app.core.handlers``, ...) or be one of the few retry/resume mechanics listed in
:data:`ALLOWED`, each with its reason. The branches are read with :mod:`ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The shell of the App's job, every module of ``bot/app/job``: it gathers facts, carries out
#: effects, holds leases and sweeps.
SHELL = tuple(sorted(str(path.relative_to(ROOT)) for path in (ROOT / "bot/app/job").glob("*.py")
                     if path.name != "__init__.py"))

#: Names and attributes that are I/O outcomes or retry counters: the exception caught
#: (``exc.transient``), the retry counters (``resuming()``, ``last_try()``, the step), whether
#: this attempt created the row (``created``), and the declared request the gathering follows.
OUTCOMES = {"exc", "resuming", "last_try", "step", "created", "request", "attempt"}

#: Modules whose functions decide (the core): a branch on their answer follows the decision.
CORE = {"conclude", "rules", "handlers", "regressions", "access", "ingest", "messages", "history_core"}

#: Branches that test data but are retry/resume mechanics or costs, not policy, or that follow
#: what a run records (its status, stored result, group or kind) to the I/O that comes first:
#: ``(module, function, the test as ast.unparse writes it)`` → why.
ALLOWED = {
    ("bot/app/job/runs.py", "start_run", "check_id is None and spec.group not in (None, spec.key)"):
        "the recorded group: a request's later runs report on its first run's check run",
    ("bot/app/job/runs.py", "_dispatch", "spec.kind == 'pr'"):
        "the recorded kind: a PR compare's dispatch reads the selection misses of culprits first",
    ("bot/app/job/runs.py", "ingest_results", "info is None or not info.active"):
        "the recorded status: a run cancelled, concluded or timed out meanwhile takes no artifact",
    ("bot/app/job/sweeps.py", "expire_runs", "info is None or not info.active"):
        "the recorded status, re-read under the lease: a run that ended meanwhile is left as it is",
    ("bot/app/job/sweeps.py", "expire_runs", "info.has_results"):
        "the recorded result: stored results are concluded (only that failed), never timed out",
    ("bot/app/job/shell.py", "<module>",
     "TYPE_CHECKING"): "import mechanics: types only, no import at run time",
    ("bot/app/job/lease.py", "renew",
     "not stop.wait(LOCK_RENEW)"): "lease mechanics: renew until the job ends",
    ("bot/app/job/executor.py", "handle_delivery", "final_failure(exc, attempt)"):
        "retry mechanics: a failure no retry can change is recorded, not raised",
    ("bot/app/job/executor.py", "_run_steps", "index + 1 < len(actions)"):
        "retry mechanics: the count of steps done; the last one is written with the delivery's end",
    ("bot/app/job/runs.py", "_open_check_run", "look_first"):
        "resume mechanics: a resumed start looks for the check run it may have created",
    ("bot/app/job/executor.py", "_begin_attempt", "not first"):
        "once-only mechanics: the store's answer whether this queue message was run before (P10)",
    ("bot/app/job/executor.py", "_begin_attempt", "row.status in SETTLED"):
        "retry mechanics: a second job for a delivery whose work is over does nothing",
    ("bot/app/job/executor.py", "handle_delivery", "event.installation_id"):
        "I/O: a delivery without an installation id gets no GitHub client",
    ("bot/app/job/executor.py", "final_failure", "isinstance(exc, GitHubError)"):
        "retry mechanics: which failures a retry cannot change",
    ("bot/app/job/runs.py", "start_run", "not info.active"):
        "resume mechanics: a resumed start of a run that was cancelled meanwhile does nothing",
    ("bot/app/job/runs.py", "ingest_results", "info.has_results"):
        "resume mechanics: results stored before the job stopped are concluded, not downloaded again",
    ("bot/app/job/runs.py", "ingest_results", "skipped"):
        "cost: no query for carried-forward values when the compare skipped nothing",
    ("bot/app/job/effects.py", "_upsert_comment", "comment_id != known"):
        "I/O: GitHub answered with another comment than the stored one: store the new id",
    ("bot/app/job/effects.py", "_accept",
     "(a.pr_number, a.sha, benchmark, a.user, a.reason) not in known"):
        "resume mechanics: a resumed step stores no accept twice",
    ("bot/app/job/gather.py", "fetch_facts",
     "not repo or (request.needs_github and client is None)"):
        "I/O: facts about no repository, or GitHub's without a client, cannot be gathered",
    ("bot/app/job/gather.py", "fetch_facts", "row is None or row.repository != repo"):
        "I/O: a stored run of another repository is none of this delivery's (as not found)",
    ("bot/app/job/gather.py", "_conclusion", "row.group_key"):
        "gathering: a run of a group is concluded with its group's rows",
    ("bot/app/job/gather.py", "config_and_problem", "problem"):
        "logging only: the core's reason the defaults stand is logged",
    ("bot/app/job/gather.py", "lease_run", "runs"):
        "I/O: the store found runs at the head",
    ("bot/app/job/lease.py", "lease",
     "not app_store.acquire_lock(session, name, holder, utc_now(), LOCK_TTL)"):
        "lease mechanics: the store's answer whether the lease was taken",
    ("bot/app/job/lease.py", "renew",
     "not app_store.acquire_lock(session, name, holder, utc_now(), LOCK_TTL)"):
        "lease mechanics: the store's answer whether the lease is still ours",
    ("bot/app/job/gather.py", "_culprit_pr", "merged"):
        "I/O: GitHub listed merged pull requests of the commit",
    ("bot/app/job/tracking.py", "_tracking_issue", "created and (not a.close)"):
        "resume mechanics: a new issue has its body already; an existing one is edited",
    ("bot/app/job/tracking.py", "_notify", "not url"):
        "the declared configuration: no webhook configured, nothing to send",
    ("bot/app/job/tracking.py", "_notify",
     "not app_store.claim_notification(session, a.key, utc_now())"):
        "at-most-once mechanics: the store's answer whether this job claimed the message",
}


def _names(node: ast.AST) -> set[str]:
    """The base names a test reads (``exc.transient`` → ``exc``; ``conclude.x(...)`` → ``conclude``)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _io_outcome(test: ast.AST) -> bool:
    """Does ``test`` look only at I/O outcomes, retry counters, the declared request or the core's answer?"""
    if isinstance(test, ast.BoolOp):
        return all(_io_outcome(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _io_outcome(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return True  # None from the store or GitHub (or not given)
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and isinstance(test.func.value, ast.Name) \
            and test.func.value.id in CORE:
        return True  # the core's decision, followed
    return bool(_names(test)) and _names(test) <= OUTCOMES


def _branches(path: Path):
    """``(function, test source)`` of every branch in the module at ``path``."""
    tree = ast.parse(path.read_text("utf-8"))
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            tests = []
            if isinstance(child, (ast.If, ast.IfExp, ast.While)):
                tests = [child.test]
            elif isinstance(child, ast.comprehension):
                tests = list(child.ifs)
            elif isinstance(child, ast.Match):
                tests = [child.subject]
            found.extend((name, t) for t in tests)
            visit(child, name)

    visit(tree, "<module>")
    return found


def shell_branches() -> list[tuple[str, str, str]]:
    """Every branch of the shell that does not test an I/O outcome: ``(module, function, test)``."""
    out = []
    for module in SHELL:
        for function, test in _branches(ROOT / module):
            if not _io_outcome(test):
                out.append((module, function, ast.unparse(test)))
    return out


def test_the_shell_branches_only_on_io_outcomes_and_listed_mechanics():
    decisions = [b for b in shell_branches() if b not in ALLOWED]
    assert decisions == [], "decisions in the shell (move them to the core, or list a retry mechanic):\n" + \
        "\n".join(f"  {m}:{f}: {t}" for m, f, t in decisions)


def test_the_shell_is_the_job_folder():
    assert "bot/app/job/executor.py" in SHELL and len(SHELL) >= 8


def test_every_allowed_branch_is_still_there():
    """An entry of :data:`ALLOWED` whose branch is gone is removed (the list stays small and true)."""
    assert sorted(set(ALLOWED) - set(shell_branches())) == []


@pytest.mark.parametrize("source, outcome", [
    ("if row is None: pass", True), ("if exc.transient and not last_try(): pass", True),
    ("if conclude.covering(accepts, run): pass", True), ("if run.kind == 'bisect': pass", False),
    ("if run.status not in ('queued', 'in_progress'): pass", False), ("x = a if request.config else b", True),
])
def test_the_classifier_tells_an_io_outcome_from_a_decision(source, outcome):
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.If, ast.IfExp))]
    assert _io_outcome(node.test) is outcome
