"""The one registration of each event the App handles: ``(event, action)`` → its handler, the
facts it needs (``facts_for``: a :class:`~bot.app.core.facts.FactRequest`) and, optionally, whether
a payload could concern it at all (``relevant``: the intake stores nothing otherwise) — declared
together, so no event can be handled without its facts (:class:`MissingFacts` at import).
Like gidgethub's ``routing.Router``, with the facts beside the handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts

Decide = Callable[[Event, Facts], list[Action]]


class MissingFacts(ValueError):
    """A route registered without the facts its handler needs (a programming error: the module
    that registers it does not load)."""


@dataclass(frozen=True)
class Route:
    """One registered ``(event, action)`` (``action`` None: every action of the event)."""

    event: str
    action: str | None
    decide: Decide
    facts: Callable[[Event], FactRequest]
    relevant: Callable[[Event], bool] | None = None

    def facts_of(self, event: Event) -> FactRequest:
        """The facts the decision on ``event`` needs (nothing for an event without a repository).

        Raises:
            Exception: whatever reading a payload the handler cannot read raises (KeyError, ...).
        """
        return self.facts(event) if event.repository else FactRequest()


class Routes:
    """The registry: ``@routes.on("pull_request", "labeled", facts=facts_for)`` over a handler.
    :meth:`lookup` prefers an ``(event, action)`` route over an event-wide one."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str | None], Route] = {}

    def on(self, event: str, action: str | None = None, *, facts: Callable[[Event], FactRequest] | None,
           relevant: Callable[[Event], bool] | None = None) -> Callable[[Decide], Decide]:
        """Register the decorated handler for ``event``/``action`` with its ``facts``.

        Raises:
            MissingFacts: ``facts`` is not given (every route declares its facts).
            ValueError: ``event``/``action`` is registered already.
        """
        if not callable(facts):
            raise MissingFacts(f"{event}/{action or '*'} is registered without the facts its handler needs")

        def add(func: Decide) -> Decide:
            key = (event, action)
            if key in self._routes:
                raise ValueError(f"a handler for {event}/{action or '*'} is registered already")
            self._routes[key] = Route(event, action, func, facts, relevant)
            return func
        return add

    def lookup(self, event: str, action: str | None = None) -> Route | None:
        """The route of ``event``/``action``, else of ``event``, else None."""
        return self._routes.get((event, action)) or self._routes.get((event, None))

    def routes(self) -> list[Route]:
        """Every registered route, by event and action."""
        return [self._routes[k] for k in sorted(self._routes, key=lambda key: (key[0], key[1] or ""))]


#: Every handler of the App, registered by the modules of ``bot.app.core.handlers``.
routes = Routes()
