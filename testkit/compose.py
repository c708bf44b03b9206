"""Read docker-compose.yml the way Compose does, for tests that run its services as processes.

- :func:`interpolate`: the Compose specification's interpolation (``${VAR}``, ``$VAR``,
  ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``,
  ``${VAR:+alt}``, ``${VAR+alt}``, ``$$``; not nested expressions), applied to every string of the file after YAML
  parsing (merge keys resolved), as ``docker compose config`` does.
- :func:`image_command`: the ``CMD`` of the Dockerfile, for a service that keeps its image's
  command.
- :func:`service_environment`, :func:`healthcheck_command`: what a service's process gets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

import yaml

_VARIABLE = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<braced>[^}]*)\}|(?P<named>[A-Za-z_][A-Za-z0-9_]*))")
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?$", re.S)


class InterpolationError(ValueError):
    """A required variable is missing (``${VAR:?message}``) or an expression is malformed."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """``text`` with Compose's variable expressions replaced from ``env``.

    Raises:
        InterpolationError: ``${VAR:?msg}`` with VAR unset or empty (``${VAR?msg}``: unset).
    """
    def replace(match: re.Match) -> str:
        if match.group("escaped"):
            return "$"
        if match.group("named"):
            return env.get(match.group("named"), "")
        parsed = _BRACED.match(match.group("braced"))
        if not parsed:
            raise InterpolationError(f"invalid interpolation {match.group(0)!r}")
        name, op, arg = parsed.group("name"), parsed.group("op"), parsed.group("arg") or ""
        value = env.get(name)
        unset_or_empty = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":-", "-"):
            return interpolate(arg, env) if unset_or_empty else value
        if op in (":?", "?"):
            if unset_or_empty:
                raise InterpolationError(f"{name}: {interpolate(arg, env) or 'required variable is missing'}")
            return value
        if op in (":+", "+"):
            return "" if unset_or_empty else interpolate(arg, env)
        return value or ""

    return _VARIABLE.sub(replace, text)


def _walk(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [_walk(item, env) for item in node]
    if isinstance(node, dict):
        return {key: _walk(value, env) for key, value in node.items()}
    return node


def load(path: Path, env: Mapping[str, str]) -> dict:
    """The compose file at ``path`` parsed and interpolated with ``env``."""
    return _walk(yaml.safe_load(path.read_text()), env)


def image_command(dockerfile: Path) -> list[str]:
    """The exec-form ``CMD [...]`` of ``dockerfile`` (continuation lines joined)."""
    text = dockerfile.read_text().replace("\\\n", " ")
    commands = [line[len("CMD"):].strip() for line in text.splitlines() if line.startswith("CMD")]
    if not commands:
        raise ValueError(f"{dockerfile} has no CMD")
    return json.loads(commands[-1])


def service_environment(service: dict) -> dict[str, str]:
    """A service's ``environment`` (mapping or ``KEY=VALUE`` list form) as strings."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def healthcheck_command(service: dict) -> list[str] | None:
    """The argv of a service's ``healthcheck.test`` (``CMD`` form; ``CMD-SHELL`` through sh)."""
    test = (service.get("healthcheck") or {}).get("test")
    if not test:
        return None
    if isinstance(test, str):
        return ["sh", "-c", test]
    if test[0] == "CMD":
        return list(test[1:])
    if test[0] == "CMD-SHELL":
        return ["sh", "-c", test[1]]
    return None
