"""The App's layout (issue 33): every event registered once with its facts, no import circle
inside ``bot/``, the queue above the job (never the reverse), no ``bot/app`` file over 400 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app.core import handlers
from bot.app.core.facts import FactRequest
from bot.app.core.handlers.routes import MissingFacts, Routes
from tests.test_layers import IMPORTS, SOURCES, _under

ROOT = Path(__file__).resolve().parents[2]


def test_a_route_without_declared_facts_does_not_load():
    routes = Routes()
    with pytest.raises(MissingFacts):
        routes.on("pull_request", "labeled", facts=None)
    with pytest.raises(TypeError):
        routes.on("pull_request", "labeled")  # type: ignore[call-arg]  - facts is required


def test_a_handler_module_registering_an_event_without_facts_fails_to_import(tmp_path, monkeypatch):
    (tmp_path / "perfgate_stray_handler.py").write_text(
        "from bot.app.core.handlers.routes import routes\n"
        "@routes.on('deployment', 'created', facts=None)\n"
        "def on_deployment(event, facts):\n    return []\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingFacts, match="deployment/created"):
        __import__("perfgate_stray_handler")
    assert not handlers.handled("deployment", "created")


def test_a_route_is_registered_once():
    routes = Routes()
    routes.on("push", facts=lambda event: FactRequest())(lambda event, facts: [])
    with pytest.raises(ValueError):
        routes.on("push", facts=lambda event: FactRequest())(lambda event, facts: [])


def test_every_handled_event_declares_its_facts_beside_its_handler():
    found = handlers.routes.routes()
    assert {r.event for r in found} >= {"pull_request", "issue_comment", "workflow_run", "check_run", "check_suite",
                                        "push", "installation", "ping", "repository", "commit_comment"}
    for route in found:
        assert callable(route.facts) and route.facts.__module__ == route.decide.__module__, route


def _graph(prefix: str) -> dict[str, set[str]]:
    """Module → the modules of ``prefix`` it imports (functions' imports and ``from pkg import
    submodule`` included, the importer's own ancestor packages too: ``bot.settings`` naming
    ``bot`` closes a circle when ``bot`` imports it)."""
    return {name: {t for t in targets if t in SOURCES and _under(t, prefix) and t != name}
            for name, targets in IMPORTS.items() if _under(name, prefix)}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_handlers_read_payloads_through_the_events_accessors():
    """``event.data`` is dug into in one place, ``bot.app.core.events.Event`` (by GitHub's
    names)."""
    digs = [f"{p.name}:{n}" for p in (ROOT / "bot" / "app" / "handlers").glob("*.py")
            for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) if ".data" in line]
    assert digs == []


def test_no_import_circle_inside_bot():
    assert _circles(_graph("bot")) == []


def test_the_queue_imports_the_job_and_the_job_never_the_queue():
    graph = _graph("bot")
    assert "bot.app.job.executor" in graph["bot.app.queue"]
    reachable, todo = set(), ["bot.app.job.executor"]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in reachable:
                reachable.add(nxt)
                todo.append(nxt)
    assert "bot.app.queue" not in reachable and "bot.app.runtime" not in reachable


def test_no_app_file_is_over_400_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text("utf-8").splitlines())
             for p in (ROOT / "bot" / "app").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 400} == {}
