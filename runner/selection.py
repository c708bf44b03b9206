"""Which benchmarks a pull request can affect (pure): changed paths + the base's code map + rules.

The code map (``code_map`` of results.json, recorded by a tracing pass: :mod:`runner.worker.tracing`)
says which files of the target repository each benchmark executed in its set-up and one timed call.
A benchmark runs when the change touches one of its files or its own file; every benchmark runs
when something changed that the map cannot see: native sources, build files, dependency pins,
perfgate's settings, a support file of the benchmarks, or any other file that is not Python and not
known to be inert (documentation, images, CI files other than perfgate's). A benchmark without a map
entry, one in the ``always`` list, and one a selection miss forced back runs too: the rule errs on
the side of measuring (a skipped benchmark that the change did slow down is a miss the history
later reports, ``runner.selection.misses``).

Patterns are globs over repository-relative paths with ``/``: a pattern without ``/`` matches the
file name in any folder (``*.cu``), one with ``/`` the whole path, where ``*`` may cross folders
(``docs/*``), as :func:`fnmatch.fnmatchcase` does.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping, Sequence

from . import results

#: Sources the tracing pass cannot see (compiled into extensions or kernels): a change is a full run.
NATIVE = ("*.cu", "*.cuh", "*.c", "*.cc", "*.cpp", "*.cxx", "*.h", "*.hh", "*.hpp", "*.hxx", "*.inl",
          "*.pyx", "*.pxd", "*.pxi", "*.f90", "*.rs", "*.metal", "*.mm", "*.ptx", "*.cl", "*.ispc", "*.so", "*.pyd")

#: How the code is built: a change is a full run.
BUILD = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "CMakeLists.txt", "*.cmake", "Makefile",
         "meson.build", "meson_options.txt", "build.py", "BUILD", "BUILD.bazel", "WORKSPACE", "*.bzl", "Dockerfile")

#: What the code runs against (dependency pins): a change is a full run. Pins kept in a folder of
#: their own count whatever the file's name (torchmetrics: ``requirements/_tests.txt``,
#: ``requirements/typing.txt``, ``requirements/base.txt``; 12 of its last 50 commits bumped one,
#: which the replay of evaluation/selection.py first read as inert text).
DEPENDENCIES = ("*requirements*.txt", "*requirements*.in", "*constraints*.txt", "*.lock", "Pipfile",
                "environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml", "meta.yaml", ".python-version",
                "requirements/*", "*/requirements/*", "pixi.toml")

#: perfgate's own settings and the suites' configuration files: a change is a full run.
SETTINGS = ("perfgate.toml", "asv.conf.json", "conftest.py", "pytest.ini", "tox.ini", ".github/workflows/perfgate*")

#: Folders whose files never change what a benchmark runs, whatever their kind (a docs build's
#: ``docs/requirements.txt`` pins nothing the benchmarks import; CI services' own folders).
INERT_DIRS = ("docs/*", "doc/*", ".azure/*", ".circleci/*", ".lightning/*", ".hooks/*", ".gitlab/*")

#: Files known not to change what a benchmark runs (the config's ``ignore`` adds to these).
INERT = INERT_DIRS + ("*.md", "*.rst", "*.txt", "*.png", "*.jpg", "*.jpeg", "*.gif", "*.svg", "*.ico", "*.ipynb",
                      "LICENSE*", "COPYING*", "AUTHORS*", "CITATION*", "CODEOWNERS", ".gitignore", ".gitattributes",
                      ".github/*", ".pre-commit-config.yaml", ".readthedocs.y*ml", ".coveragerc", ".flake8",
                      "mkdocs.yml", ".git-blame-ignore-revs", ".mailmap", ".editorconfig", ".gitlab-ci.yml",
                      "azure-pipelines.yml", "codecov.yml", ".codecov.yml")

#: Reasons, in the order a benchmark's is decided (the report and the tests use these words).
FULL, ALWAYS, FORCED, OWN_FILE, UNMAPPED, CHANGED, NOT_AFFECTED = (
    "full run", "always", "selection miss", "own file changed", "no map entry", "executes changed code", "not affected")
#: The reason of a benchmark whose changed files changed only Triton kernels that compile to the
#: same cubins on both sides (runner.kernels.plan.same_machine_code): its GPU time is not needed.
SAME_MACHINE_CODE = "same machine code"


@dataclass(frozen=True)
class Rules:
    """The target's selection settings (``[tool.perfgate.selection]``, read from the base branch).

    Attributes:
        enabled: pull-request compares measure only the affected benchmarks (``perfgate compare``
            without ``--affected``/``--all`` follows it).
        always: globs of benchmark names that always run (``--filter``'s matching).
        full_run: path globs whose change runs everything, besides :data:`NATIVE`, :data:`BUILD`,
            :data:`DEPENDENCIES` and :data:`SETTINGS`.
        ignore: path globs whose change affects no benchmark, besides :data:`INERT`.
    """

    enabled: bool = False
    always: tuple[str, ...] = ()
    full_run: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """One benchmark's selection: ``run`` or not, and why (one of the reason words, with detail)."""

    name: str
    run: bool
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class Plan:
    """The selection for one change.

    Attributes:
        full_run: why everything runs (a sentence), or None.
        choices: one per benchmark, in the order given.
        changed: the changed paths considered (repository-relative).
    """

    full_run: str | None
    choices: tuple[Choice, ...]
    changed: tuple[str, ...] = field(default=())

    @property
    def selected(self) -> list[str]:
        return [c.name for c in self.choices if c.run]

    @property
    def skipped(self) -> list[str]:
        return [c.name for c in self.choices if not c.run]


def matches(name: str, pattern: str | None) -> bool:
    """A benchmark name against a pattern (``--filter``, the ``always`` list): a glob (``*``, ``?``,
    ``[``) matched against the whole name and against the name without its parameters, so
    ``bench_norm*`` selects every ``bench_norm[...]`` case (and ``*.time_mm`` every asv
    ``module.Class.time_mm(...)`` case); otherwise a substring. No pattern matches everything."""
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?"):
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(re.split(r"[\[(]", name, maxsplit=1)[0], pattern)
    return pattern in name


@dataclass(frozen=True)
class Listed:
    """What the benchmarks' listing gives a compare or a run (:func:`listed`): the ``cases`` to
    measure, the files that could not be listed (``errors``: ``{file, error}``), the benchmarks the
    suite skips itself (``skipped``: ``{name, file, reason}``) and those base lists and head does
    not (``removed``), each in the listing's order."""

    cases: list[dict]
    errors: list[dict]
    skipped: list[dict]
    removed: list[dict]


def listed(head: Mapping, base: Mapping | None, pattern: str | None,
           names: Collection[str] | None = None, *, shared: bool = False) -> Listed:
    """What a compare (or, without ``base``, a run) measures of its listings
    (:class:`runner.protocol.Listing`'s ``benchmarks``, ``errors``, ``skipped``): the benchmarks
    ``pattern`` (``--filter``, :func:`matches`) and ``names`` (exact names; None: all) select, the
    files whose name ``pattern`` matches; removed benchmarks only where each side listed its own
    directory (not ``shared``, ``--benchmarks DIR``)."""

    def wanted(name: str) -> bool:
        return matches(name, pattern) and (names is None or name in names)

    on_head = {c["name"] for c in head["benchmarks"]}
    gone = [] if shared or base is None else [c for c in base.get("benchmarks") or []
                                              if c["name"] not in on_head]
    return Listed(cases=[c for c in head["benchmarks"] if wanted(c["name"])],
                  errors=[e for e in head["errors"] if matches(e["file"], pattern)],
                  skipped=[dict(s) for s in head.get("skipped") or [] if wanted(s["name"])],
                  removed=[c for c in gone if wanted(c["name"])])


def nothing_listed(found: Listed, head: Mapping, pattern: str | None, directory: str,
                   looked_for: str) -> str | None:
    """The user error of a listing that leaves nothing to measure, skip or report (``found``, from
    ``head``'s listing of ``directory`` with ``pattern``), or None. ``looked_for``: what the
    convention looks for (:func:`runner.pipeline.suites.looked_for`)."""
    if found.cases or found.errors or found.skipped:
        return None
    if head["benchmarks"] and pattern:
        there = ", ".join(c["name"] for c in head["benchmarks"][:8])
        return f"no benchmark matches --filter {pattern!r} (there are: {there})"
    return f"no benchmarks found in {directory} ({looked_for})"


def selecting(affected: bool | None, enabled: bool) -> bool:
    """Whether a compare selects: ``--affected`` (True) or ``--all`` (False) as asked, else (None)
    the configuration's ``[selection] enabled``."""
    return bool(affected) if affected is not None else enabled


def unselected(enabled: bool, count: int) -> dict | None:
    """The ``selection`` record of a compare that does not select: ``mode: all`` when the
    configuration enables selection (so ``--all`` asked for every one of its ``count``
    benchmarks), else None (no record)."""
    if not enabled:
        return None
    return {"mode": "all", "map_sha": None, "full_run": "asked to run every benchmark (--all)",
            "changed": [], "changed_count": 0, "run": count, "skipped": [],
            "run_reasons": {FULL: count}}


def path_matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether the repository-relative ``path`` matches one of the globs (module docstring's rule)."""
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        if "/" in pattern.rstrip("/"):
            if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.rstrip("/") + "/*"):
                return True
        elif fnmatch.fnmatchcase(name, pattern) or (pattern.endswith("/") and path.startswith(pattern)):
            return True
    return False


def unseen_change(path: str, rules: Rules, bench_dir: str, bench_files: set[str]) -> str | None:
    """Why a change of ``path`` is one the map cannot see (a sentence), or None when the map decides.

    Args:
        path: repository-relative, ``/``-separated.
        rules: the target's :class:`Rules`.
        bench_dir: the benchmarks' directory, repository-relative ("" when unknown).
        bench_files: every benchmark's own file, repository-relative.
    """
    checks = (("full_run pattern", rules.full_run), ("benchmark or perfgate settings", SETTINGS),
              ("inert", INERT_DIRS), ("native source", NATIVE), ("build file", BUILD),
              ("dependency pins", DEPENDENCIES))
    for kind, patterns in checks:
        if path_matches(path, patterns):
            return None if kind == "inert" else f"{path} changed ({kind}: the code map cannot see it)"
    if path in bench_files:
        return None
    if bench_dir and (path + "/").startswith(bench_dir.rstrip("/") + "/"):
        return f"{path} changed (a benchmark support file: every benchmark may use it)"
    if path_matches(path, INERT) or path_matches(path, rules.ignore):
        return None
    if not path.endswith(".py"):
        return f"{path} changed (not Python: the code map cannot see what reads it)"
    return None


def _why_full(changed: Sequence[str], code_map: Mapping | None, rules: Rules, bench_dir: str,
              bench_files: set[str]) -> str | None:
    """Why every benchmark runs (no map, a map blind to the repository, a change the map cannot
    follow), or None: the map decides per benchmark (a part of :func:`select`)."""
    if code_map is None:
        return "no code map exists for the base"
    if not blind_spots_clear(code_map, bench_dir, bench_files):
        return ("the code map saw no file of the repository outside the benchmarks "
                "(an installed package?)")
    for path in changed:
        why = unseen_change(path, rules, bench_dir, bench_files)
        if why:
            return why
    return None


def select(benchmarks: Sequence[tuple[str, str]], changed: Sequence[str], code_map: Mapping | None, rules: Rules,
           *, bench_dir: str = "", forced: Mapping[str, str] | None = None,
           same_code: Mapping[str, str] | None = None) -> Plan:
    """Decide which benchmarks a change can affect.

    Args:
        benchmarks: ``(name, own file)`` per benchmark, the file repository-relative.
        changed: repository-relative paths the change adds, modifies or deletes (``git diff
            --name-only --no-renames base head``).
        code_map: the base's ``code_map`` (results.json): ``{benchmarks: {name: [files]}, ...}``;
            None when no map exists for the base (everything runs).
        rules: :class:`Rules` from the base branch.
        bench_dir: the benchmarks' directory, repository-relative.
        forced: ``{name: why}`` of benchmarks a selection miss switched to always-run.
        same_code: ``{path: why}`` of changed files whose kernels compile to the same cubins and
            whose other code is unchanged (the static pass's ``same_code``): a benchmark whose
            changed files are all there is skipped, :data:`SAME_MACHINE_CODE`.

    Returns:
        A :class:`Plan` with one :class:`Choice` per benchmark.
    """
    changed = tuple(sorted(set(changed)))
    forced = dict(forced or {})
    bench_files = {f for _, f in benchmarks if f}
    full = _why_full(changed, code_map, rules, bench_dir, bench_files)
    mapped: Mapping = (code_map.get("benchmarks") or {}) if code_map is not None else {}
    changed_set = set(changed)
    choices = []
    for name, own in benchmarks:
        if full:
            choices.append(Choice(name, True, FULL, full))
        elif any(matches(name, p) for p in rules.always):
            choices.append(Choice(name, True, ALWAYS, "in the config's always list"))
        elif name in forced:
            choices.append(Choice(name, True, FORCED, forced[name]))
        elif own in changed_set:
            choices.append(Choice(name, True, OWN_FILE, own))
        elif name not in mapped:
            choices.append(Choice(name, True, UNMAPPED, (code_map.get("unmapped") or {}).get(name, "")))
        else:
            hit = sorted(changed_set.intersection(mapped[name]))
            real = [p for p in hit if p not in (same_code or {})]
            if real:
                more = " …" if len(real) > 5 else ""
                choices.append(Choice(name, True, CHANGED, ", ".join(real[:5]) + more))
            elif hit:
                choices.append(Choice(name, False, SAME_MACHINE_CODE, ", ".join(hit[:5])))
            else:
                choices.append(Choice(name, False, NOT_AFFECTED, ""))
    return Plan(full, tuple(choices), changed)


def blind_spots_clear(code_map: Mapping, bench_dir: str, bench_files: set[str]) -> bool:
    """Whether the map saw some file of the repository that is not a benchmark's (else the code
    under test runs from outside the checkout, e.g. a non-editable install, and the map is blind)."""
    prefix = bench_dir.rstrip("/") + "/" if bench_dir else None
    for files in (code_map.get("benchmarks") or {}).values():
        for path in files:
            if path not in bench_files and not (prefix and path.startswith(prefix)):
                return True
    return not (code_map.get("benchmarks") or {})  # an empty map has nothing to be blind about


def misses(skipped: Mapping[str, str], verdicts: Mapping[str, str]) -> dict[str, str]:
    """Selection misses: benchmarks a PR skipped whose measurement later changed.

    Args:
        skipped: ``{name: pr}`` benchmarks skipped as not affected (``pr`` a label such as a SHA or
            ``#123``, said in the reason).
        verdicts: ``{name: verdict}`` from the full measurement that followed (a compare of the
            same base and head, or the default branch's history after the merge).

    Returns:
        ``{name: why}`` for each skipped benchmark whose verdict is ``regression`` or
        ``improvement``: the ``forced`` argument of :func:`select` until the map is rebuilt.
    """
    return {name: f"skipped for {pr} but measured {verdicts[name]} afterwards"
            for name, pr in skipped.items() if verdicts.get(name) in results.CHANGED}


def record(plan: Plan, *, mode: str, map_sha: str | None, last: Mapping[str, dict] | None = None,
           files: Mapping[str, str] | None = None, max_paths: int = 200) -> dict:
    """The ``selection`` section of results.json (plain data; results.py validates it).

    Args:
        plan: the :class:`Plan`.
        mode: ``affected`` (selection applied) or ``all`` (asked to run everything).
        map_sha: the revision the code map was recorded at (None: no map).
        last: ``{name: {"sha": ..., "median": seconds, "unit": ...}}`` the last measurement of a
            skipped benchmark (carried forward); missing names have none.
        files: ``{name: own file}`` for the skipped entries.
        max_paths: at most this many changed paths are kept (the count is always exact).
    """
    last = last or {}
    skipped = []
    for c in plan.choices:
        if c.run:
            continue
        entry = {"name": c.name, "file": (files or {}).get(c.name), "reason": c.reason}
        if c.name in last:
            entry["last"] = dict(last[c.name])
        skipped.append(entry)
    reasons: dict[str, int] = {}
    for c in plan.choices:
        if c.run:
            reasons[c.reason] = reasons.get(c.reason, 0) + 1
    return {"mode": mode, "map_sha": map_sha, "full_run": plan.full_run, "changed": list(plan.changed[:max_paths]),
            "changed_count": len(plan.changed), "run": len(plan.selected), "skipped": skipped,
            "run_reasons": reasons}
