"""``installation`` / ``installation_repositories``: the installation rows; ``ping``: nothing."""

from __future__ import annotations

from ..actions import Action, SaveInstallation
from ..events import Event
from ..facts import FactRequest, Facts
from .routes import routes


def facts_for(event: Event) -> FactRequest:
    """Nothing beyond the payload."""
    return FactRequest()


def _installation_actions(event: Event, facts: Facts) -> list[Action]:
    inst = event.installation
    if not isinstance(inst.get("id"), int):
        return []
    account = (inst.get("account") or {}).get("login")
    active = event.action not in ("deleted", "suspend")
    return [SaveInstallation(int(inst["id"]), account, active)]


routes.on("installation", facts=facts_for)(_installation_actions)
routes.on("installation_repositories", facts=facts_for)(_installation_actions)


@routes.on("ping", facts=facts_for)
def on_ping(event: Event, facts: Facts) -> list[Action]:
    return []
