"""The layers of ARCHITECTURE.md, kept true: every module's imports, parsed from its source.

Imports are read with :mod:`ast` — ``import x``, ``from x import y``, relative imports resolved
against the module's package, imports inside functions too — and so are the strings that name a
module at run time (``importlib.import_module("x")``, ``"x.y:func"`` handler strings,
``_lazy("x.y", "func")`` pairs) and the ``[project.entry-points]`` of pyproject.toml (an edge from
the module that loads the group to the modules its entry points name). A rule that fails names the
module and the import.

Beside the wing rules: no import circle anywhere (Tarjan over the module graph; the circles being
removed are listed in :data:`KNOWN_CIRCLES`), no decision reaching an I/O library through the tree,
every named handler and entry point defined, ``results.VERDICTS`` equal to the schema's, no product
file over 400 lines but data tables.
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
RUNNER_LEAVES = ("runner", "runner.errors", "runner.environment", "runner.stats", "runner.git",
                 "runner.config", "runner.config_values", "runner.results", "runner.gate",
                 "runner.formats", "runner.measures", "runner.selection", "runner.protocol",
                 "runner.policy_source")

#: Leaf packages: every module in them is a leaf. The benchmark conventions are one: the parent
#: detects through them and the workers list and set up through them (one module per convention).
#: The devices are another: the workers time and measure through them (one module per vendor).
#: The sandbox (the pull request's code confined: the jail, its limits, its environment and what
#: leaves it) and the outputs (does head compute what base did) are leaves grouped by concept.
RUNNER_LEAF_PACKAGES = ("runner.conventions", "runner.devices", "runner.sandbox", "runner.outputs")
RUNNER_WINGS = {
    "runner.worker": (),                                     # inside the worker processes: torch lives here
    "runner.intent": (),                                     # what a change means to do
    "runner.scaffold": (),                                   # perfgate init: files for a target repository
    "runner.report": ("runner.intent",),                     # rendering a stored result
    "runner.profile": ("runner.report",),                    # trace analysis
    "runner.hints": ("runner.profile", "runner.report"),     # root causes: the rules, ranked
    # Triton kernels compiled without a GPU, base vs head (issue 49); their register_pressure hints
    "runner.kernels": ("runner.hints", "runner.profile", "runner.report"),
    # the parent of a compare; it records facts and never renders them (the CLI writes the reports)
    "runner.pipeline": ("runner.kernels", "runner.hints", "runner.profile", "runner.intent"),
    "runner.cli": ("runner.pipeline", "runner.kernels", "runner.hints", "runner.profile",
                   "runner.report", "runner.intent", "runner.scaffold"),
}

#: What the App and the Action may take from the engine: the data model, its rendering, the
#: configuration (and its values read from text), the errors, the environment and sandbox of
#: processes that run the target's code (and the laundering of what leaves the sandbox), the JSON
#: other benchmark tools print (history imports), the one runner of git (the Action's), and the
#: gate (what fails a check run).
RUNNER_FACE = ("runner.results", "runner.gate", "runner.report", "runner.config",
               "runner.config_values", "runner.errors", "runner.sandbox", "runner.formats",
               "runner.selection", "runner.git")

#: Libraries that do I/O (network, database, web): pure modules import none of them.
IO_LIBRARIES = ("sqlalchemy", "alembic", "flask", "github", "requests", "huey", "psycopg", "redis", "subprocess",
                "socket", "urllib.request", "http", "urllib3")

#: Modules that decide (pure functions over plain data, DESIGN.md's functional core).
PURE = ("runner.results", "runner.gate", "runner.protocol", "runner.config_values",
        "runner.sandbox.limits", "runner.outputs",
        "runner.selection", "runner.stats", "runner.measures", "runner.report", "runner.formats",
        "runner.profile.match",
        "runner.profile.diff",
        "runner.hints", "runner.profile.noise", "runner.profile.summaries", "runner.profile.names",
        "runner.profile.events", "runner.profile.kernels", "runner.profile.operators", "runner.profile.devices",
        "runner.profile.roofline", "runner.intent.rules", "runner.intent.classifier",
        "runner.intent.precise", "runner.intent.claim_check", "runner.intent.impact",
        "runner.intent.claims", "runner.intent.claim_words", "runner.intent.claim_pairs",
        "runner.intent.diff", "runner.pipeline.machine.conditions",
        "runner.pipeline.machine.doctor",
        "runner.pipeline.machine.finding", "runner.pipeline.machine.gpu_checks",
        "runner.pipeline.machine.clock_plan", "runner.pipeline.machine.sustained",
        "runner.pipeline.timing.schedule", "runner.pipeline.timing.evidence",
        "runner.pipeline.bisect.bisect",
        "runner.pipeline.timing.stops", "runner.pipeline.timing.benchstate", "runner.scaffold.plan",
        "runner.kernels.find", "runner.kernels.evaluate", "runner.kernels.specs", "runner.kernels.plan", "runner.kernels.usage",
        "runner.kernels.occupancy", "runner.kernels.table", "runner.kernels.words")


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

#: The App's decisions: pure functions over plain data (every module of ``bot.app.core``).
BOT_PURE = ("bot.app.core", "bot.history.points", "bot.history.series", "bot.history.texts",
            "bot.history.changepoints", "bot.history.chart", "bot.history.imports")

#: Which bot modules may import a library that does I/O (the library → the modules).
BOT_IO_HOMES = {
    "github": ("bot.app.github.gateway", "bot.app.github.github_errors",
               "bot.app.github.github_user"),
    "requests": ("bot.app.github.gateway",),
    "urllib3": ("bot.app.github.outgoing",),
    "huey": ("bot.app.queue",),
    "flask": ("bot", "bot.web"),
    "sqlalchemy": ("bot.db", "bot.schema", "bot.app.store",
                   "bot.history.store", "bot.history.reads", "bot.history.tables", "bot.web.sessions"),
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
    """Every module ``name`` imports or names for a run-time import, absolute.

    ``from pkg import sub`` is an import of ``pkg.sub`` alone when ``sub`` is a module: the package
    is imported only when a name of its own (one defined in its ``__init__``) is taken.
    """
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
            submodules = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in SOURCES]
            out += submodules
            if len(submodules) < len(node.names):  # a name of the package (or module) itself
                out.append(module)
        elif isinstance(node, ast.Call) and _called(node) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append(node.args[0].value)
        elif isinstance(node, ast.Call) and _called(node) == "_lazy":  # _lazy("module", "function")
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append(node.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _handler(node.value):
            out.append(_handler(node.value)[0])  # a "module:function" handler
    return out


def _called(call: ast.Call) -> str:
    return getattr(call.func, "attr", getattr(call.func, "id", ""))


def _handler(text: str) -> tuple[str, str] | None:
    """``("module", "function")`` when ``text`` is a ``"module:function"`` string naming a module of the tree."""
    module, colon, function = text.partition(":")
    return (module, function) if colon and module in SOURCES and function.isidentifier() else None


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


#: ``[project.entry-points."group"]`` of pyproject.toml: group → its ``"module:function"`` values.
ENTRY_POINTS = {group: list(points.values()) for group, points in _pyproject().get("entry-points", {}).items()}


def _plugin_edges() -> dict[str, set[str]]:
    """The modules that load an entry point group (they name the group in a string) → the modules
    the group's entry points name: imports made at run time through the installed metadata."""
    edges: dict[str, set[str]] = {}
    for name, path in SOURCES.items():
        strings = {node.value for node in ast.walk(ast.parse(path.read_text("utf-8")))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        for group, values in ENTRY_POINTS.items():
            if group in strings:
                edges.setdefault(name, set()).update(value.partition(":")[0] for value in values)
    return edges


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


def _crosses_wings(name: str, target: str) -> bool:
    """Whether ``name`` importing ``target`` breaks :data:`RUNNER_WINGS`."""
    if not _under(name, "runner") or not _under(target, "runner") or _leaf(target):
        return False
    own, theirs = _wing(name), _wing(target)
    if own is None:  # a leaf: nothing of the wings
        return theirs is not None
    return theirs is not None and theirs != own and theirs not in RUNNER_WINGS[own]


def test_each_runner_wing_imports_only_itself_the_wings_below_and_the_leaves():
    assert _violations(_crosses_wings) == []


def test_the_parent_of_a_compare_never_imports_the_report():
    """A planning module that names a recorded value takes it from the record's home
    (``runner.environment``), never from the renderer, which would load every format with it."""
    assert _crosses_wings("runner.pipeline.machine.conditions", "runner.report.view")
    assert _crosses_wings("runner.pipeline.bisect.bisect_run", "runner.report.render")
    assert not _crosses_wings("runner.pipeline.machine.conditions", "runner.environment")
    assert not _crosses_wings("runner.cli.bisect", "runner.report.render")
    assert not _crosses_wings("runner.hints.evidence", "runner.report.units")


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


#: Libraries a decision must not reach through the tree either: the GPU's driver and the
#: profiler's trace files (added to :data:`IO_LIBRARIES` for the transitive rule).
IO_REACHED = IO_LIBRARIES + ("pynvml", "gzip", "shutil", "tempfile")

#: Imports the transitive rule does not follow, each with why the importer stays pure.
PURE_CROSSINGS = {
    # config.suite_names() reads the registered conventions' names to validate ``suite``; no
    # convention code runs in the parent through it (tests/runner/test_conventions.py ties the two)
    ("runner.config", "runner.conventions"): "the convention names the key suite accepts",
}


def _reached(start: str) -> dict[str, list[str]]:
    """Module of the tree → the shortest import path from ``start`` (or a module under it) to it."""
    paths = {m: [m] for m in SOURCES if _under(m, start)}
    queue = sorted(paths)
    while queue:
        module = queue.pop(0)
        for target in sorted(GRAPH[module]):
            if target not in paths and (module, target) not in PURE_CROSSINGS:
                paths[target] = paths[module] + [target]
                queue.append(target)
    return paths


def _impure_reaches(pure: str) -> list[str]:
    return [f"{' -> '.join(path)} imports {target}" for module, path in sorted(_reached(pure).items())
            for target in IMPORTS[module] if any(_under(target, lib) for lib in IO_REACHED)]


@pytest.mark.parametrize("pure", PURE + BOT_PURE)
def test_pure_modules_reach_no_io_library_through_the_tree(pure):
    """A decision imports no module of the tree that does I/O, at any depth (``doctor`` reached
    NVML through ``machine_facts``, ``summaries`` gzip through ``kineto``)."""
    assert _impure_reaches(pure) == []


def test_each_pure_crossing_is_an_import():
    assert [pair for pair in PURE_CROSSINGS if pair[1] not in GRAPH[pair[0]]] == []


def test_the_verdicts_are_the_schemas():
    """``runner.results.VERDICTS`` and results-v1.json's verdict enum of a change are one list;
    a memory change's verdicts are among them; an output's are
    runner.outputs.verdict.OUTPUT_VERDICTS."""
    import json

    from runner.results import VERDICTS

    schema = json.loads((ROOT / "runner" / "schema" / "results-v1.json").read_text("utf-8"))
    enums = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and "enum" in node["properties"].get("verdict", {}):
                enums.append(node["properties"]["verdict"]["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    from runner.outputs.verdict import OUTPUT_VERDICTS

    # an output's verdict (runner.outputs.verdict) is a vocabulary of its own, tied here too
    output = schema["$defs"].pop("output")
    assert output["properties"]["verdict"]["enum"] == list(OUTPUT_VERDICTS)
    walk(schema)
    verdicts = [str(getattr(v, "value", v)) for v in VERDICTS]
    assert len(enums) >= 2 and len(set(verdicts)) == len(verdicts)
    assert max(enums, key=len) == verdicts
    assert all(set(enum) <= set(verdicts) for enum in enums)


#: Product files longer than :data:`MAX_LINES`: data tables, one row a line (reason each).
DATA_TABLES = {
    "runner/intent/rules.py": "the intent classifier's phrase and path rules, one rule a line",
}
#: Product files over the limit while a change in flight splits them (none now; a listed file that got short fails).
BEING_SPLIT: set[str] = set()
MAX_LINES = 400


def _long_files() -> dict[str, int]:
    counts = {str(path.relative_to(ROOT)): len(path.read_text("utf-8").splitlines()) for path in SOURCES.values()}
    return {path: n for path, n in sorted(counts.items()) if n > MAX_LINES}


def test_no_product_file_over_400_lines():
    """One reason to change per file: a file of runner/, bot/ or action/ over 400 lines is split,
    unless it is a data table; a listed file that got short leaves its list."""
    long = _long_files()
    listed = set(DATA_TABLES) | BEING_SPLIT
    assert {path: n for path, n in long.items() if path not in listed} == {}
    assert sorted(listed - set(long)) == []


def test_app_subcommands_plug_in_through_the_entry_point_group():
    group = ENTRY_POINTS["perfgate.commands"]
    assert all(value.split(":")[0] in SOURCES and value.startswith("bot.") for value in group)
    assert not [line for line in (ROOT / "runner" / "cli" / "main.py").read_text().splitlines() if "bot." in line]
    assert _plugin_edges() == {"runner.cli.main": {"bot.subcommands"}}


def _defined(module: str) -> set[str]:
    """The names ``module`` binds at its top level (functions, classes, assignments, imports)."""
    tree = ast.parse(SOURCES[module].read_text("utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _named_functions() -> list[tuple[str, str, str]]:
    """(where, module, function) of every ``"module:function"`` string and ``_lazy`` call of the
    tree and every entry point and console script of pyproject.toml."""
    found = [(f"pyproject [project.scripts] {key}", *value.split(":"))
             for key, value in _pyproject().get("scripts", {}).items()]
    found += [(f"pyproject entry point group {group}", *value.split(":"))
              for group, values in ENTRY_POINTS.items() for value in values]
    for name, path in SOURCES.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _handler(node.value):
                found.append((name, *_handler(node.value)))
            elif (isinstance(node, ast.Call) and _called(node) == "_lazy" and len(node.args) == 2
                  and all(isinstance(a, ast.Constant) for a in node.args)):
                found.append((name, node.args[0].value, node.args[1].value))
    return found


def test_every_named_handler_and_entry_point_exists():
    """A handler string, a ``_lazy`` pair, a console script or an entry point names a module of the
    tree and a function defined there: the import the string stands for would succeed."""
    named = _named_functions()
    assert len(named) > 10
    assert [f"{where}: {module}:{function}" for where, module, function in named
            if module not in SOURCES or function not in _defined(module)] == []


def test_the_conventions_load_none_of_the_code_they_run():
    """The parent imports the conventions' registry to detect: no torch, pytest, triton or asv with it
    (their worker halves import those inside the functions that run in a worker)."""
    code = ("import sys, runner.conventions, runner.pipeline.suites, runner.pipeline.compare, runner.config; "
            "print(sorted(m for m in ('torch', 'pytest', 'triton', 'asv_runner', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


#: What an import's comment says when it binds a name its module never uses on purpose: it runs the
#: imported module for its effect (fills a registry, declares tables on a Base, loads a library
#: once).
IMPORTED_FOR_EFFECT = ("registers", "declares", "preloads")


def _module_level_imports(node: ast.AST):
    """The imports of a module outside its functions and classes (those bind the module's names)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                    ast.Lambda)):
            yield from _module_level_imports(child)


def _re_exports(source: str) -> list[str]:
    """``"line: what"`` for each re-export in a module's ``source``: a module-level import that
    binds a name the module never uses, and any ``noqa: F401``, unless the import's comment says it
    registers, declares or preloads. Such a name is there only for other modules to take from here:
    a second address for a name whose home is elsewhere."""
    tree = ast.parse(source)
    lines = source.splitlines()
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # "quoted" annotations
            try:
                used |= {n.id for n in ast.walk(ast.parse(node.value, mode="eval"))
                         if isinstance(n, ast.Name)}
            except (SyntaxError, ValueError):
                pass

    def comment(node: ast.stmt) -> str:
        return " ".join(line.partition("#")[2] for line in lines[node.lineno - 1:node.end_lineno])

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, (ast.Import, ast.ImportFrom)) and "noqa: F401" in comment(node)
                and not any(word in comment(node) for word in IMPORTED_FOR_EFFECT)):
            found.append((node.lineno, "noqa: F401"))
    for node in _module_level_imports(tree):
        if (isinstance(node, ast.ImportFrom) and node.module == "__future__"
                or any(word in comment(node) for word in IMPORTED_FOR_EFFECT)):
            continue
        found += [(node.lineno, bound) for alias in node.names
                  if (bound := (alias.asname or alias.name).split(".")[0]) not in used]
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_no_module_re_exports_another_modules_names():
    """One address per name: outside a package's ``__init__``, a module imports only the names it
    uses; its importers take a name from the name's home, never through a module that imported it
    (no facade, no "imported from here too")."""
    assert [f"{name}:{where}" for name, path in sorted(SOURCES.items())
            if path.name != "__init__.py" for where in _re_exports(path.read_text("utf-8"))] == []


def test_the_re_export_finder_finds_re_exports():
    source = ("from __future__ import annotations\n"
              "from a import b, c  # noqa: F401 - imported from here too\n"
              "from d import e\n"
              "import f.g\n"
              "from h import i  # noqa: F401 - registers the rules\n"
              "if e:\n"
              "    from j import k\n"
              "def m() -> 'c':\n"
              "    import n  # noqa: F401\n"
              "    import o  # noqa: F401 - preloads o for the children\n"
              "    return f.g(e)\n")
    assert _re_exports(source) == ["2: b", "2: noqa: F401", "7: k", "9: noqa: F401"]


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _graph() -> dict[str, set[str]]:
    """Module → the modules of the tree it imports (anywhere in its source, run-time names and entry
    points included). Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so those
    are edges too — except the importer's own ancestors, which are already being imported when it
    runs; a name taken from an own ancestor's ``__init__`` is an edge (that is the package circle)."""
    graph: dict[str, set[str]] = {name: set() for name in SOURCES}
    for name, targets in IMPORTS.items():
        own = set(_ancestors(name))
        for target in targets:
            implied = [module for module in _ancestors(target) if module not in own]
            graph[name] |= {module for module in implied + [target] if module in SOURCES and module != name}
    for name, targets in _plugin_edges().items():
        graph[name] |= targets & set(SOURCES)
    return graph


GRAPH = _graph()


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


#: Import circles known and being removed, each as the set of its modules.
KNOWN_CIRCLES: set[frozenset[str]] = set()


def test_no_import_circle():
    """No module reaches itself through its imports (a package importing its submodule and the
    submodule taking a name of the package's ``__init__`` is a circle); a circle in
    :data:`KNOWN_CIRCLES` that no longer exists must leave the list."""
    circles = set(_circles(GRAPH))
    assert sorted(sorted(c) for c in circles - KNOWN_CIRCLES) == []
    assert sorted(sorted(c) for c in KNOWN_CIRCLES - circles) == []


def test_the_circle_finder_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"f"}, "g": set()}
    assert set(_circles(graph)) == {frozenset("abc"), frozenset("de")}


def test_rendering_a_result_loads_no_torch_numpy_or_scipy():
    code = ("import sys, runner.results, runner.report, runner.report.escape; "
            "from runner import results; results.validate; "
            "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'runner.intent.cli', 'runner.intent.git') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_planning_module_loads_no_renderer_and_the_report_no_intent_classifier():
    """``runner.pipeline.machine.conditions`` and ``doctor`` name recorded values without loading
    the report; the report loads the intent classifier only to render a document's intent
    section."""
    code = ("import sys, runner.pipeline.machine.conditions, runner.pipeline.machine.doctor; "
            "loaded = lambda *p: sorted(m for m in sys.modules if m.startswith(p)); "
            "print(loaded('runner.report', 'runner.intent')); "
            "import runner.report; print(loaded('runner.intent'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["[]", "[]"]


def test_the_app_and_the_action_do_not_know_each_other():
    """They meet only through GitHub: the workflow the App dispatches, the artifact the Action uploads."""
    assert _violations(lambda name, target: (_under(name, "bot") and _under(target, "action"))
                       or (_under(name, "action") and _under(target, "bot"))) == []


#: Beside the product, lowest first: what the tests and the evaluation scripts share (fakes,
#: generated inputs, throwaway services), the evaluation, the tests. Each may import the product
#: and what stands before it here; the product imports none of them.
HELPERS = ("testkit", "evaluation", "tests")


def _helper_imports(folder: str) -> dict[str, list[str]]:
    """Every file's imports under ``folder`` (an evaluation script is named by its path)."""
    paths = sorted((ROOT / folder).rglob("*.py"))
    return {_module_name(path): _imports(_module_name(path), path) for path in paths}


def _imports_from(imports: dict[str, list[str]], folders: tuple[str, ...]) -> list[str]:
    return [f"{name} imports {target}" for name, targets in sorted(imports.items())
            for target in targets if any(_under(target, folder) for folder in folders)]


def test_the_shared_helpers_and_the_evaluation_never_import_the_tests():
    """testkit imports neither the tests nor the evaluation, the evaluation never the tests (the
    fakes both use live in testkit), the product none of the three."""
    assert _imports_from(_helper_imports("testkit"), ("tests", "evaluation")) == []
    assert _imports_from(_helper_imports("evaluation"), ("tests",)) == []
    assert _imports_from(IMPORTS, HELPERS) == []


def test_the_helper_rule_sees_an_import_inside_a_function(tmp_path):
    script = tmp_path / "load.py"
    script.write_text("def main():\n    from tests.app import flow\n")
    found = {"evaluation.load": _imports("evaluation.load", script)}
    assert _imports_from(found, ("tests",)) == ["evaluation.load imports tests.app"]


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


#: The folders of ``bot.app`` and ``runner.pipeline``, each with the folders of its package it may
#: import (its own always): the folder states the rule. A package's own modules (``bot.app.queue``,
#: ``runner.pipeline.compare``) are the room named by the package.
ROOMS = {
    "bot.app.core": (),                                       # the decisions, pure
    "bot.app.github": ("bot.app.core",),                      # GitHub and the webhook, thin shells
    "bot.app.store": ("bot.app.core",),                       # the App's tables and queries
    "bot.app.job": ("bot.app.core", "bot.app.github", "bot.app.store"),   # the job's shell
    "bot.app": ("bot.app.core", "bot.app.github", "bot.app.store", "bot.app.job"),  # queue, runtime
    "runner.pipeline.machine": (),                            # the machine and its conditions
    "runner.pipeline.timing": ("runner.pipeline.machine", "runner.pipeline.revisions"),
    "runner.pipeline": ("runner.pipeline.timing", "runner.pipeline.machine"),  # compare, run
    "runner.pipeline.bisect": ("runner.pipeline",),           # perfgate bisect, over compares
}


def _room(module: str) -> str | None:
    return max((r for r in ROOMS if _under(module, r)), key=len, default=None)


def test_each_folder_imports_only_itself_and_the_folders_it_names():
    """``core/`` imports nothing of ``job/``, ``github/`` or ``store/``; ``machine/`` nothing else
    of the pipeline; ``timing/`` never ``bisect/`` or the passes that drive it."""
    def breaks(name, target):
        own, theirs = _room(name), _room(target)
        return (own is not None and theirs is not None and theirs != own
                and theirs not in ROOMS[own] and target not in ROOMS[own])
    assert _violations(breaks) == []


#: Folders of runner/, bot/ and action/ with more than :data:`MAX_MODULES` modules, not split yet
#: (a listed folder that got small leaves the list).
LARGE_FOLDERS: dict[str, str] = {}
MAX_MODULES = 13


def test_no_folder_over_13_modules():
    """A folder of more than 13 modules (``__init__`` not counted) is split into folders that
    state their rule, as ``bot/app`` and ``runner/pipeline`` were."""
    counts: dict[str, int] = {}
    for path in SOURCES.values():
        if path.name != "__init__.py":
            folder = str(path.parent.relative_to(ROOT))
            counts[folder] = counts.get(folder, 0) + 1
    assert {f for f, n in counts.items() if n > MAX_MODULES} == set(LARGE_FOLDERS)


#: Functions longer than :data:`MAX_FUNCTION_LINES` because they are data tables, not logic:
#: the command line's parser (one ``add_argument`` per option). The migrations' schemas are not
#: among :data:`SOURCES` (data too).
LONG_DATA_TABLES = {"runner/cli/main.py:build_parser"}
MAX_FUNCTION_LINES = 60


def test_no_function_over_60_lines_outside_data_tables():
    """Architecture review 2026-12-06: a function longer than a screen is split into named steps
    (issue 46's goal); only the data tables above are exempt."""
    long = set()
    for path in SOURCES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    long.add(f"{path.relative_to(ROOT)}:{node.name}")
    assert long == LONG_DATA_TABLES
