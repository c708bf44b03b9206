"""The layers of ARCHITECTURE.md, kept true: every module's imports, parsed from its source.

Imports are read with :mod:`ast` — ``import x``, ``from x import y``, relative imports resolved
against the module's package, imports inside functions too — and so are the strings that name a
module at run time (``importlib.import_module("x")``, ``"x.y:func"`` handler strings) and the
``[project.entry-points]`` of pyproject.toml. A rule that fails names the module and the import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("runner", "bot", "action")

#: The runner's wings, lowest first. A module may import its own wing and the wings below it;
#: ``runner.cli`` is the top. The leaves at the bottom belong to every wing.
RUNNER_LEAVES = ("runner", "runner.errors", "runner.environment", "runner.stats", "runner.git", "runner.child_env",
                 "runner.sandbox", "runner.config", "runner.results", "runner.formats", "runner.measures", "runner.selection")

#: Leaf packages: every module in them is a leaf. The benchmark conventions are one: the parent
#: detects through them and the workers list and set up through them (one module per convention).
RUNNER_LEAF_PACKAGES = ("runner.conventions",)
RUNNER_WINGS = {
    "runner.worker": (),                                     # inside the worker processes: torch lives here
    "runner.intent": (),                                     # what a change means to do
    "runner.scaffold": (),                                   # perfgate init: files for a target repository
    "runner.report": ("runner.intent",),                     # rendering a stored result
    "runner.profile": ("runner.report",),                    # trace analysis, hints
    "runner.pipeline": ("runner.profile", "runner.report", "runner.intent"),   # the parent of a compare
    "runner.cli": ("runner.pipeline", "runner.profile", "runner.report", "runner.intent", "runner.scaffold"),
}

#: What the App and the Action may take from the engine: the data model, its rendering, the
#: configuration, the errors, the environment and sandbox of processes that run the target's code,
#: and the JSON other benchmark tools print (history imports).
RUNNER_FACE = ("runner.results", "runner.report", "runner.config", "runner.errors", "runner.child_env",
               "runner.sandbox", "runner.formats", "runner.selection")

#: Libraries that do I/O (network, database, web): pure modules import none of them.
IO_LIBRARIES = ("sqlalchemy", "alembic", "flask", "github", "requests", "huey", "psycopg", "redis", "subprocess",
                "socket", "urllib.request", "http", "urllib3")

#: Modules that decide (pure functions over plain data, DESIGN.md's functional core).
PURE = ("runner.results", "runner.selection", "runner.stats", "runner.measures", "runner.report", "runner.formats", "runner.profile.match",
        "runner.profile.diff",
        "runner.profile.hints", "runner.profile.noise", "runner.profile.summaries", "runner.profile.names",
        "runner.profile.roofline", "runner.intent.rules", "runner.intent.classifier", "runner.intent.features",
        "runner.intent.model", "runner.intent.impact",
        "runner.intent.diff", "runner.pipeline.conditions", "runner.pipeline.select", "runner.pipeline.doctor",
        "runner.pipeline.schedule", "runner.pipeline.bisect",
        "runner.scaffold.plan")


#: The App's wings, lowest first: a module may import its own wing, the wings below it and the
#: floor. ``bot.web`` (Flask views) → ``bot.app`` (the App's event logic and its shell) →
#: ``bot.history`` → the floor; nothing imports upward.
BOT_FLOOR = ("bot.db", "bot.settings")
BOT_WINGS = {
    "bot.history": (),
    "bot.app": ("bot.history",),
    "bot.web": ("bot.app", "bot.history"),
}
#: Where the App is composed and started (may import every wing): the Flask factory, the
#: sub-commands, the schema of every table.
BOT_TOP = ("bot", "bot.cli", "bot.subcommands", "bot.schema", "bot.tls")

#: The App's decisions: pure functions over plain data.
BOT_PURE = ("bot.app.events", "bot.app.payloads", "bot.app.commands", "bot.app.facts", "bot.app.handlers",
            "bot.app.actions",
            "bot.app.messages", "bot.app.ingest", "bot.app.conclude", "bot.app.access", "bot.history.core",
            "bot.history.changepoints", "bot.history.chart", "bot.app.manifest",
            "bot.history.imports", "bot.app.regressions", "bot.app.notify")

#: Which bot modules may import a library that does I/O (the library → the modules).
BOT_IO_HOMES = {
    "github": ("bot.app.gateway", "bot.app.github_errors", "bot.app.github_user"),
    "requests": ("bot.app.gateway",),
    "urllib3": ("bot.app.outgoing",),
    "huey": ("bot.app.queue",),
    "flask": ("bot", "bot.web"),
    "sqlalchemy": ("bot.db", "bot.schema", "bot.app.store", "bot.app.tables",
                   "bot.history.store", "bot.history.tables", "bot.web.sessions"),
    "alembic": ("bot.db",),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                found[_module_name(path)] = path
    return found


SOURCES = _sources()


def _imports(name: str, path: Path) -> list[str]:
    """Every module ``name`` imports or names for a run-time import, absolute."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append(module)
            out += [f"{module}.{alias.name}" for alias in node.names
                    if f"{module}.{alias.name}" in SOURCES]  # "from pkg import submodule"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append(node.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if ":" in text and text.split(":", 1)[0] in SOURCES and text.split(":", 1)[1].isidentifier():
                out.append(text.split(":", 1)[0])  # a "module:function" handler
    return out


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _ours(module: str) -> bool:
    return any(_under(module, p) for p in PACKAGES)


IMPORTS = {name: _imports(name, path) for name, path in SOURCES.items()}


def _violations(rule) -> list[str]:
    return [f"{name} imports {target}" for name, targets in sorted(IMPORTS.items()) for target in targets
            if rule(name, target)]


def test_the_engine_does_not_know_the_app_or_the_action():
    assert _violations(lambda name, target: _under(name, "runner") and (_under(target, "bot")
                                                                       or _under(target, "action"))) == []


def test_the_app_and_the_action_use_only_the_engines_face():
    def breaks(name, target):
        return (not _under(name, "runner") and _under(target, "runner")
                and not any(_under(target, face) for face in RUNNER_FACE) and target != "runner")
    assert _violations(breaks) == []


def _wing(module: str) -> str | None:
    return next((w for w in RUNNER_WINGS if _under(module, w)), None)


def _leaf(module: str) -> bool:
    return module in RUNNER_LEAVES or any(_under(module, p) for p in RUNNER_LEAF_PACKAGES)


def test_each_runner_wing_imports_only_itself_the_wings_below_and_the_leaves():
    def breaks(name, target):
        if not _under(name, "runner") or not _under(target, "runner") or _leaf(target):
            return False
        own, theirs = _wing(name), _wing(target)
        if own is None:  # a leaf: nothing of the wings
            return theirs is not None
        return theirs is not None and theirs != own and theirs not in RUNNER_WINGS[own]
    assert _violations(breaks) == []


def test_the_parent_never_imports_the_workers_code():
    """torch is imported by the worker side only; the line between them is a folder line."""
    assert _violations(lambda name, target: not _under(name, "runner.worker") and _under(target, "runner.worker")) == []


@pytest.mark.parametrize("pure", PURE)
def test_pure_modules_import_no_io_library(pure):
    modules = [m for m in IMPORTS if _under(m, pure)]
    assert modules, f"{pure} does not exist"
    bad = [f"{m} imports {t}" for m in modules for t in IMPORTS[m]
           if any(_under(t, lib) for lib in IO_LIBRARIES)]
    assert bad == []


def test_app_subcommands_plug_in_through_the_entry_point_group():
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    group = project["entry-points"]["perfgate.commands"]
    assert all(value.split(":")[0] in SOURCES and value.startswith("bot.") for value in group.values())
    assert not [line for line in (ROOT / "runner" / "cli" / "main.py").read_text().splitlines() if "bot." in line]


def test_the_conventions_load_none_of_the_code_they_run():
    """The parent imports the conventions' registry to detect: no torch, pytest, triton or asv with it
    (their worker halves import those inside the functions that run in a worker)."""
    code = ("import sys, runner.conventions, runner.pipeline.suites, runner.pipeline.compare, runner.config; "
            "print(sorted(m for m in ('torch', 'pytest', 'triton', 'asv_runner', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_import_circle_through_the_conventions_or_the_worker():
    """No module of the conventions or the worker reaches itself through its imports
    (``runner.worker.discovery`` and the suite modules did, before the conventions became one
    registry above side-by-side modules). Circles elsewhere in runner/ are not this test's."""
    # ``from pkg import submodule`` names the package too; a module's own ancestor packages are
    # already being imported when it runs, so those edges close no circle
    graph = {name: {t for t in targets if t in SOURCES and _under(t, "runner") and t != name and not _under(name, t)}
             for name, targets in IMPORTS.items() if _under(name, "runner")}
    circles = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert [c for c in circles if "runner.conventions" in c or "runner.worker" in c] == []


def test_rendering_a_result_loads_no_torch_numpy_or_scipy():
    code = ("import sys, runner.results, runner.report, runner.report.escape; "
            "from runner import results; results.validate; "
            "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'runner.intent.cli', 'runner.intent.git') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_app_and_the_action_do_not_know_each_other():
    """They meet only through GitHub: the workflow the App dispatches, the artifact the Action uploads."""
    assert _violations(lambda name, target: (_under(name, "bot") and _under(target, "action"))
                       or (_under(name, "action") and _under(target, "bot"))) == []


def _bot_wing(module: str) -> str | None:
    return next((w for w in BOT_WINGS if _under(module, w)), None)


def test_each_bot_wing_imports_only_itself_the_wings_below_and_the_floor():
    def breaks(name, target):
        if not _under(name, "bot") or not _under(target, "bot") or name in BOT_TOP or target == "bot":
            return False
        if name in BOT_FLOOR:  # the floor imports nothing of the App but the floor
            return target not in BOT_FLOOR
        own, theirs = _bot_wing(name), _bot_wing(target)
        if target in BOT_TOP:
            return True
        return theirs is not None and theirs != own and theirs not in BOT_WINGS[own]
    assert _violations(breaks) == []


@pytest.mark.parametrize("pure", BOT_PURE)
def test_the_apps_decisions_import_no_io_library(pure):
    modules = [m for m in IMPORTS if _under(m, pure)]
    assert modules, f"{pure} does not exist"
    bad = [f"{m} imports {t}" for m in modules for t in IMPORTS[m] if any(_under(t, lib) for lib in IO_LIBRARIES)]
    assert bad == []


@pytest.mark.parametrize("library", sorted(BOT_IO_HOMES))
def test_each_io_library_has_its_homes_in_the_app(library):
    """PyGithub and requests only in the gateway, huey only in the queue, Flask only in the
    web wing (and the factory), SQLAlchemy only in the database, the tables and the stores."""
    homes = BOT_IO_HOMES[library]
    bad = [f"{name} imports {target}" for name, targets in sorted(IMPORTS.items()) if _under(name, "bot")
           for target in targets if _under(target, library)
           and not any(name == home or (home != "bot" and _under(name, home)) for home in homes)]
    assert bad == []


def test_the_rules_see_every_module():
    """The checks above read every module of the three packages (a new wing must be placed)."""
    runner_modules = [m for m in SOURCES if _under(m, "runner")]
    unplaced = [m for m in runner_modules if not _leaf(m) and _wing(m) is None]
    assert unplaced == []
    bot_modules = [m for m in SOURCES if _under(m, "bot")]
    assert [m for m in bot_modules if m not in BOT_TOP + BOT_FLOOR and _bot_wing(m) is None] == []
    assert len(IMPORTS) == len(SOURCES) > 60
