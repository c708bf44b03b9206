"""``repository`` ``privatized`` / ``publicized``."""

from __future__ import annotations

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts
from .routes import routes


def facts_for(event: Event) -> FactRequest:
    """Nothing beyond the payload."""
    return FactRequest()


@routes.on("repository", "privatized", facts=facts_for)
@routes.on("repository", "publicized", facts=facts_for)
def on_visibility(event: Event, facts: Facts) -> list[Action]:
    """Nothing to do but what every delivery does: record the repository's visibility (the
    job, by ``bot.app.core.access.visibility_records``)."""
    return []
