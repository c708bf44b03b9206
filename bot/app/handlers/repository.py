"""``repository`` ``privatized`` / ``publicized``."""

from __future__ import annotations

from ..actions import Action
from ..events import Event
from ..facts import FactRequest, Facts
from .common import router


def facts_for(event: Event) -> FactRequest:
    """Nothing beyond the payload."""
    return FactRequest()


@router.register("repository", action="privatized")
@router.register("repository", action="publicized")
def on_visibility(event: Event, facts: Facts) -> list[Action]:
    """Nothing to do but what every delivery does: record the repository's visibility (the
    executor, for ``bot.app.access``)."""
    return []
