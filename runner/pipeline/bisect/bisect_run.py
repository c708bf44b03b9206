"""``perfgate bisect``: the first-parent range between ``good`` and ``bad``, one paired compare of
each measured commit against ``good``, and the commit that brought the regression (the imperative
shell: git, the compares, the files; every decision is :mod:`.bisect`'s).

The first compare (``good`` → ``bad``) runs every benchmark ``--benchmark PATTERN`` selects, with
threshold 0 so that it runs until its interval misses 1 (or its budget ends, or more pairs are
futile) and at level :data:`FIRST_ALPHA`; the clearest regression is followed (:func:`.bisect.choose_benchmark`) — the benchmark
the pattern names exactly, when there is one (the App names the series' benchmark) — and its
level is the target. Each step compares one commit against ``good`` for that benchmark alone, with the
threshold at half the regression (:func:`.bisect.step_threshold`) and enough process pairs before
the first look to tell the two levels apart (:func:`.bisect.step_pairs`); every compare has the
configuration's own budget (``max_time``) and its results are kept under
``OUT/compares/NN-<sha>/``. A commit whose compare cannot run (install, checkout, no benchmark) or
whose benchmark fails at it is skipped. When a step's level lies between good and the
regression, the range holds more than one step: the first one is searched too, re-reading the
levels measured so far.

Writes ``OUT/results.json`` — the first compare's document with a ``bisect`` section (schema in
``runner/schema/results-v1.json``, ``$defs/bisect``); ``perfgate bisect`` writes its
``OUT/report.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from ... import results as results_mod
from ...errors import GitError, UserError
from ...git import git, repo_root, resolve
from ...sandbox.limits import PROGRESS_FILE
from ...stats import MAX_ROUNDS, MIN_PROCESS_PAIRS, PAIR_ROUNDS
from . import bisect as plan
from .bisect import Bisection, Level

#: At most this many compares in one bisect (``--max-compares``); a search that needs more stops
#: and says so.
MAX_COMPARES = 40

#: The level of the first compare's test (good → bad): the regression it finds is what every step
#: is matched against, and a search for a change that is not there names a commit at random; so
#: 1 % rather than the configuration's 5 % (one false regression in 100 bisects of unchanged code).
FIRST_ALPHA = 0.01

#: Steps searched at most when the range holds more than one (the last step and those before it).
MAX_STEPS = 3

#: Longest commit subject kept in the results (characters).
SUBJECT_LIMIT = 200


@dataclass(frozen=True)
class Commit:
    """A commit of the range: full SHA, subject line, and the pull request the subject names."""

    sha: str
    subject: str

    @property
    def pr(self) -> int | None:
        return plan.pr_of(self.subject)

    def as_dict(self) -> dict:
        return {"sha": self.sha, "subject": self.subject[:SUBJECT_LIMIT], "pr": self.pr}


def first_parent_range(root: Path, good: str, bad: str) -> list[Commit]:
    """The first-parent history after ``good`` up to ``bad``, oldest first (``bad`` last).

    Raises:
        UserError: the two are the same commit, ``good`` is not an ancestor of ``bad``, or it is
            not on ``bad``'s first-parent line (a commit of a merged side branch).
    """
    if good == bad:
        raise UserError(f"--good and --bad are the same commit ({good[:12]}): nothing to bisect")
    if not _is_ancestor(root, good, bad):
        raise UserError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}: give the older, fast commit "
                        "as --good and the newer, slow one as --bad")
    lines = git(root, "log", "--first-parent", "--reverse", "--format=%H%x1f%s", f"{good}..{bad}").splitlines()
    commits = [Commit(*(line.split("\x1f", 1) + [""])[:2]) for line in lines if line.strip()]
    first_parent = git(root, "rev-parse", "--verify", "--quiet", f"{commits[0].sha}^1", check=False) if commits else ""
    if not commits or first_parent != good:
        raise UserError(f"--good {good[:12]} is not on the first-parent history of --bad {bad[:12]} (a commit of a "
                        "merged branch?): give a commit of the branch itself, e.g. `git merge-base` of the two")
    return commits


def _is_ancestor(root: Path, good: str, bad: str) -> bool:
    try:
        git(root, "merge-base", "--is-ancestor", good, bad)  # exit status 1: not an ancestor
    except GitError:
        return False
    return True


class Comparer(Protocol):
    """One paired compare of ``head_sha`` against ``base_sha`` writing ``out/results.json``: the
    engine's (:class:`EngineComparer`) or a test's. ``filter``: ``--filter``; ``names``: exact
    benchmark names to run (None: all that ``filter`` selects); ``overrides``: configuration
    values that replace the target's. Returns the results document.

    Raises:
        UserError: the compare could not run (checkout, install, no benchmarks).
    """

    def __call__(self, base_sha: str, head_sha: str, out: Path, *, filter: str | None,
                 names: list[str] | None, overrides: dict) -> dict: ...


@dataclass
class BisectRequest:
    """What one bisect needs (from the CLI, the Action or a test). ``benchmark``: the
    ``--benchmark`` pattern (a glob or substring of names); ``benchmarks``: ``--benchmarks DIR``;
    ``overrides``: command-line configuration values (None: not given)."""

    repo: str
    good: str
    bad: str
    out: Path
    benchmark: str | None = None
    benchmarks: str | None = None
    config_file: str | None = None
    overrides: dict = field(default_factory=dict)
    max_compares: int = MAX_COMPARES


class EngineComparer:
    """:class:`Comparer` through the engine's own compare (:func:`runner.pipeline.compare.compare`)."""

    def __init__(self, req: BisectRequest, progress=None):
        self.req = req
        self.progress = progress

    def __call__(self, base_sha: str, head_sha: str, out: Path, *, filter: str | None,
                 names: list[str] | None, overrides: dict) -> dict:
        from ..compare import CompareRequest, compare

        given = {k: v for k, v in self.req.overrides.items() if v is not None}
        request = CompareRequest(repo=self.req.repo, base=base_sha, head=head_sha, config=None, out=out,
                                 benchmarks=self.req.benchmarks, filter=filter, names=names,
                                 config_overrides={**given, **overrides},
                                 config_file=self.req.config_file,
                                 progress_file=self.req.out / PROGRESS_FILE)
        return compare(request, self.progress)


def _silent(_: str) -> None:
    pass


class _Ledger:
    """The compares made so far, as the ``bisect.compares`` entries, and their seconds."""

    def __init__(self, out: Path, comparer: Comparer, say: Callable[[str], None]):
        self.out, self.comparer, self.say = out, comparer, say
        self.entries: list[dict] = []
        self.spent = 0.0

    def run(self, base: str, commit: Commit, index: int, *, filter: str | None, names: list[str] | None,
            overrides: dict) -> tuple[dict | None, str | None, dict]:
        """One compare; ``(document, None, entry)`` or ``(None, problem, entry)`` when it could not run."""
        folder = self.out / "compares" / f"{len(self.entries):02d}-{commit.sha[:12]}"
        t0 = time.monotonic()
        entry = {"index": index, **commit.as_dict(), "outcome": None, "ratio": None, "ci_low": None, "ci_high": None,
                 "process_pairs": None, "seconds": None, "problem": None}
        try:
            doc, problem = self.comparer(base, commit.sha, folder, filter=filter, names=names, overrides=overrides), None
        except UserError as exc:
            doc, problem = None, str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__
        spent = ((doc or {}).get("settings") or {}).get("budget", {}).get("spent_s") if doc else None
        entry["seconds"] = round(float(spent) if isinstance(spent, (int, float)) else time.monotonic() - t0, 3)
        self.spent += entry["seconds"]
        entry["problem"] = problem
        self.entries.append(entry)
        return doc, problem, entry


def _benchmark_level(doc: dict, name: str) -> tuple[Level | None, str | None, dict]:
    """The followed benchmark's level in a step's document, or the problem that hides it."""
    entry = next((b for b in doc.get("benchmarks") or [] if b.get("name") == name), None)
    if entry is None:
        return None, f"no benchmark {name} at this commit", {}
    change = results_mod.change_of(entry)
    head_error = (entry.get("head") or {}).get("error")
    if head_error or change.get("verdict") == "failed":
        last = (str(head_error or (entry.get("base") or {}).get("error") or "failed").strip().splitlines() or [""])[-1]
        return None, f"{name} failed: {last[:300]}", change
    level = Level.of(change)
    return level, None if level else f"{name} has no interval at this commit ({change.get('verdict')})", change


def bisect(req: BisectRequest, comparer: Comparer | None = None, progress=None,
           say: Callable[[str], None] = _silent) -> dict:
    """Bisect the range and write ``OUT/results.json``; returns the document.

    Args:
        comparer: how a compare runs (default :class:`EngineComparer` with ``progress``).
        say: one line per compare, for the terminal.

    Raises:
        UserError: a bad repository or ref, a range that is not a first-parent line, or a first
            compare (``good`` → ``bad``) that cannot run.
    """
    root = repo_root(req.repo)
    good, bad = resolve(root, req.good), resolve(root, req.bad)
    commits = first_parent_range(root, good, bad)
    comparer = comparer or EngineComparer(req, progress)
    req.out.mkdir(parents=True, exist_ok=True)
    ledger = _Ledger(req.out, comparer, say)
    say(f"bisect: {len(commits)} commit(s) on the first-parent line {good[:12]}..{bad[:12]}")

    first, problem, entry = ledger.run(good, commits[-1], len(commits) - 1, filter=req.benchmark, names=None,
                                       overrides={"threshold": 0.0, "alpha": FIRST_ALPHA, "profile": False})
    if first is None:
        raise UserError(f"the first compare ({good[:12]} → {bad[:12]}) could not run: {problem}")
    entries = first.get("benchmarks") or []
    exact = [b for b in entries if req.benchmark is not None and b.get("name") == req.benchmark]
    choice = plan.choose_benchmark(exact or entries)  # a benchmark named exactly is the one followed
    section = {"good": {"sha": good}, "bad": {"sha": bad}, "pattern": req.benchmark, "first_parent": True,
               "commits": len(commits), "benchmark": None, "regression": None, "status": "no-regression",
               "culprit": None, "suspects": [], "steps": [], "more_than_one_step": False, "notes": [],
               "compares": ledger.entries, "other_regressions": []}
    if choice is None:
        entry["outcome"] = "no-regression"
        section["notes"].append("no benchmark is slower at bad than at good by an interval that misses no change")
        # what the first compare did find is news too: a bisect asked for a slowdown and measured
        # a speed-up said nothing of it (issue 47)
        faster = [(str(b.get("name")), level) for b in entries
                  if (level := Level.of(results_mod.change_of(b))) is not None and level.high < 1.0]
        for name, level in sorted(faster, key=lambda f: f[1].ratio)[:5]:
            section["notes"].append(f"faster at bad than at good: {name} {_pct(level)}")
        if len(faster) > 5:
            section["notes"].append(f"and {len(faster) - 5} more benchmark(s) faster at bad")
        return _finish(req, first, section, ledger)

    name, target = choice
    entry.update(outcome="target", **target.as_dict(), process_pairs=_pairs(first, name))
    section.update(benchmark=name, regression=target.as_dict())
    section["other_regressions"] = sorted(
        str(b.get("name")) for b in first.get("benchmarks") or []
        if b.get("name") != name
        and (Level.of(results_mod.change_of(b)) or Level(1, 1, 1)).low > 1.0)
    say(f"bisect: following {name}: {_pct(target)} at bad")
    section.update(_Search(ledger, commits, good, first, name, target, say).run(req.max_compares))
    return _finish(req, first, section, ledger)


class _Search:
    """The steps of one bisect after its first compare: each commit measured against ``good`` for
    the followed benchmark ``name`` alone (threshold half the regression,
    :func:`.bisect.step_threshold`; pairs enough to tell the levels apart,
    :func:`.bisect.step_pairs`, doubled for a commit measured again), the main search, then the
    first step of a range that holds more than one."""

    def __init__(self, ledger: _Ledger, commits: list[Commit], good: str, first: dict, name: str,
                 target: Level, say: Callable[[str], None]):
        self.ledger, self.commits, self.good, self.say = ledger, commits, good, say
        self.name, self.target = name, target
        self.settings = first.get("settings") or {}
        self.pair_rounds = int(self.settings.get("pair_rounds") or PAIR_ROUNDS)
        max_pairs = max(2, int(self.settings.get("max_rounds") or MAX_ROUNDS) // self.pair_rounds)
        self.pairs = plan.step_pairs(_pairs(first, name) or 2, target, target,
                                     int(self.settings.get("min_process_pairs")
                                         or MIN_PROCESS_PAIRS),
                                     max_pairs)
        self.levels: dict[int, Level] = {len(commits) - 1: target}

    def measure(self, search: Bisection, index: int) -> str:
        """One step's compare of commit ``index`` against good; its outcome
        (:meth:`.bisect.Bisection.record`)."""
        commit = self.commits[index]
        rounds = max(2, self.pairs * 2 ** search.attempts.get(index, 0) * self.pair_rounds)
        overrides = {"threshold": plan.step_threshold(search.target), "min_rounds": rounds,
                     "max_rounds": max(rounds, int(self.settings.get("max_rounds") or MAX_ROUNDS)),
                     "profile": False}
        doc, problem, row = self.ledger.run(self.good, commit, index, filter=None,
                                            names=[self.name], overrides=overrides)
        level, change = None, {}
        if doc is not None:
            level, problem, change = _benchmark_level(doc, self.name)
        outcome = search.record(index, level, problem)
        row.update(outcome=outcome, problem=problem if level is None else None,
                   process_pairs=change.get("process_pairs"), **(level.as_dict() if level else {}))
        self.say(f"bisect: {commit.sha[:12]} “{commit.subject[:60]}”: "
                 + (f"{_pct(level)} → {outcome}" if level else f"skipped ({problem})"))
        return outcome

    def drive(self, search: Bisection, max_compares: int) -> bool:
        """Drive ``search`` to its end; False when the compare limit stopped it."""
        while (index := search.next()) is not None:
            if len(self.ledger.entries) >= max_compares:
                return False
            while (self.measure(search, index) == "again"
                   and len(self.ledger.entries) < max_compares):
                pass
        return True

    def run(self, max_compares: int) -> dict:
        """The searches, and the section's fields they decide (steps, suspects, culprit, status,
        notes)."""
        commits, levels = self.commits, self.levels
        main = Bisection(len(commits), self.target, levels=levels)
        finished = self.drive(main, max_compares)
        searches = [main]
        while finished and len(searches) < MAX_STEPS:
            partials = searches[0].partials()
            if not partials:
                break
            sub = Bisection(partials[0] + 1, levels[partials[0]], levels=levels)
            finished = self.drive(sub, max_compares)
            searches.insert(0, sub)
        steps = [_step(commits, s, levels) for s in searches]
        found = len(main.suspects) == 1
        return {"steps": steps, "suspects": [commits[i].as_dict() for i in main.suspects],
                "culprit": steps[-1] if found else None,
                "status": "stopped" if not finished else ("found" if found else "ambiguous"),
                "more_than_one_step": len(searches) > 1 or any(c in plan.MORE_THAN_ONE_STEP
                                                                for c in main.outcomes.values()),
                "notes": _notes(commits, main, searches, finished, max_compares)}


def _pairs(doc: dict, name: str) -> int | None:
    entry = next((b for b in doc.get("benchmarks") or [] if b.get("name") == name), {})
    pairs = results_mod.change_of(entry).get("process_pairs")
    return int(pairs) if isinstance(pairs, int) and not isinstance(pairs, bool) else None


def _pct(level: Level) -> str:
    return f"{100 * (level.ratio - 1):+.1f} % [{100 * (level.low - 1):+.1f}, {100 * (level.high - 1):+.1f}]"


def _step(commits: list[Commit], search: Bisection, levels: dict[int, Level]) -> dict:
    """One step the search found: the first bad-side commit, its level against good, and its own
    change (its level over the last good-side level: 1 for ``good``)."""
    at = levels.get(search.hi, search.target)
    before = levels.get(search.lo) if search.lo >= 0 else None
    own = at.ratio / (before.ratio if before else 1.0)
    return {**commits[search.hi].as_dict(), "index": search.hi, **at.as_dict(), "step_ratio": own,
            "suspects": len(search.suspects)}


def _notes(commits: list[Commit], main: Bisection, searches: list[Bisection], finished: bool,
           max_compares: int) -> list[str]:
    notes = []
    if not finished:
        notes.append(f"stopped after {max_compares} compares (--max-compares) before the search ended")
    if len(main.suspects) > 1:
        notes.append("the commits before the first bad-side one could not be measured; the regression came with "
                     f"one of {len(main.suspects)} commits")
    if len(searches) > 1:
        notes.append(f"the range holds more than one step: {len(searches)} commits each moved the benchmark part of "
                     "the way (listed in order)")
    for index, cls in sorted(main.outcomes.items()):
        if cls == "beyond":
            notes.append(f"{commits[index].sha[:12]} was slower than bad: a later commit undid part of the regression")
        elif cls == "opposite":
            notes.append(f"{commits[index].sha[:12]} was faster than good: the history moved both ways")
    for index, why in sorted(main.skipped.items()):
        notes.append(f"skipped {commits[index].sha[:12]}: {why}")
    return notes


def _finish(req: BisectRequest, first: dict, section: dict, ledger: _Ledger) -> dict:
    """The document (the first compare's, with ``bisect``), written to ``OUT/results.json``."""
    max_time = (first.get("settings") or {}).get("max_time")
    section["compares"] = ledger.entries
    section["budget"] = {"compares": len(ledger.entries), "spent_s": round(ledger.spent, 3), "max_time": max_time,
                         "worst_case": plan.worst_case_compares(section["commits"]), "limit": req.max_compares}
    doc = results_mod.storable({**first, "bisect": section})
    results_mod.dump(doc, req.out / "results.json")
    return doc
