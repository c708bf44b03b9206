"""Webhook payloads checked against GitHub's published schemas before the App acts on them.

The schemas are a reduced copy of ``@octokit/openapi-webhooks`` (MIT, see
``bot/app/schemas/README.md`` for version and source) holding only the events and actions
perfgate handles (``bot.app.core.handlers``) and the components they reference, in
``bot/app/schemas/webhooks.json``::

    {"info": {...}, "events": {"pull_request.labeled": "webhook-pull-request-labeled", "push": ...},
     "components": {"schemas": {...}}}

The schemas use only keywords JSON Schema draft 7 shares with 2020-12 (the description is
OpenAPI 3.1): ``type``, ``required``, ``properties``, ``items``, ``enum``, ``oneOf``/``anyOf``/
``allOf``, ``additionalProperties``; they are compiled to Python with ``fastjsonschema``, once
per process and schema: all of them before the web process serves (:func:`warm_up`, called by
``bot.create_app``), elsewhere on first use. Formats are not asserted (nor are they by the tests'
``jsonschema`` reference check, ``testkit/webhook_schemas.py``); defaults are not filled in.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

#: The shipped copy (package data).
SCHEMAS = resources.files("bot.app") / "schemas" / "webhooks.json"

_URI = "urn:perfgate:github-webhooks"


class PayloadError(ValueError):
    """A payload that breaks its event's published schema. ``str()`` names the event, the
    path of the offending field and what was expected, never the value."""


def event_key(event: str, action: str | None) -> str:
    """``pull_request.labeled`` for (``pull_request``, ``labeled``); ``push`` for (``push``, None)."""
    return f"{event}.{action}" if action else event


@lru_cache(maxsize=1)
def document() -> dict:
    """The shipped schema document (parsed once per process)."""
    return json.loads(SCHEMAS.read_text("utf-8"))


#: Compiled validators by schema name, and the lock under which one is compiled (two threads
#: asking for the same schema at once compile it once: the second waits for the first).
_VALIDATORS: dict[str, Callable[[Any], Any]] = {}
_COMPILING = threading.Lock()


def _validator(schema_name: str) -> Callable[[Any], Any]:
    """The compiled validator of one schema (``fastjsonschema``: 0.05–0.2 s to build, then
    ~0.2 ms per 25 kB payload, where ``jsonschema`` takes ~3 ms), built once per process."""
    validator = _VALIDATORS.get(schema_name)
    if validator is None:
        import fastjsonschema

        with _COMPILING:
            validator = _VALIDATORS.get(schema_name)
            if validator is None:
                validator = _VALIDATORS[schema_name] = fastjsonschema.compile(
                    {**document(), "$ref": f"#/components/schemas/{schema_name}"}, use_default=False,
                    use_formats=False)
    return validator


def _problem(error) -> str:
    """Where the payload breaks the schema and what the schema wanted there (not the value)."""
    path = [str(part) for part in error.path[1:]]  # path[0] is fastjsonschema's name for the root
    if error.rule == "required":
        present = error.value if isinstance(error.value, dict) else {}
        missing = next((name for name in error.rule_definition if name not in present), "?")
        return f"missing required field {'/'.join([*path, missing])}"
    where = "/".join(path) or "(top)"
    if error.rule == "type":
        wanted = error.rule_definition
        return f"{where}: expected {' or '.join(wanted) if isinstance(wanted, list) else wanted}"
    if error.rule in ("enum", "const"):
        return f"{where}: not one of the values GitHub sends"
    if error.rule in ("oneOf", "anyOf"):
        return f"{where}: matches none of the shapes GitHub sends"
    return f"{where}: fails {error.rule}"


def warm_up() -> int:
    """Compile the validator of every handled event and action now (≈ 2.7 s of CPU in all, 25
    schemas; each is otherwise compiled by the first delivery of its kind, which then waits
    0.05–0.25 s of CPU — seconds on a busy machine — and, holding the GIL, makes the deliveries
    behind it wait). ``bot.create_app`` calls it before the web process serves. Returns how many."""
    names = sorted(set(document()["events"].values()))
    for name in names:
        _validator(name)
    return len(names)


def validate(event: str, action: str | None, payload: Any) -> None:
    """Check one delivery's payload against the published schema of ``event``/``action``.

    Args:
        event: ``X-GitHub-Event``; action: the payload's ``action`` (None for ``push``, ``ping``).
        payload: the parsed body.
    Raises:
        PayloadError: no published schema for that event/action in the shipped copy (perfgate
            does not handle it, or GitHub does not send it), or the payload breaks it; the
            message is one line like ``pull_request.labeled: pull_request/number: expected
            integer``.
    """
    import fastjsonschema

    key = event_key(event, action)
    schema_name = document()["events"].get(key)
    if schema_name is None:
        raise PayloadError(f"{event}: no published webhook schema for this action")
    try:
        _validator(schema_name)(payload)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise PayloadError(f"{key}: {_problem(exc)}"[:300]) from None
    except RecursionError:  # a free-form part of the schema nested deeper than Python recurses
        raise PayloadError(f"{key}: nested too deep") from None
