"""GitHub's published webhook schemas and examples, fetched with ``npm pack`` (data, not code).

- ``@octokit/openapi-webhooks`` (``generated/api.github.com.json``, OpenAPI 3.1: JSON Schema
  2020-12, one ``webhook-<event>-<action>`` schema per event and action);
- ``@octokit/webhooks-examples`` (``api.github.com/index.json``: real example deliveries).

Cached under ``tests/.cache/`` like the REST description of ``testkit/fake_github/spec.py``
(prefetch: ``python -m testkit.webhook_schemas``). Payload builders start from an example
and must end valid against the schema (:func:`check`).
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import lru_cache
from pathlib import Path

from bot.app.core.payloads import event_key
from testkit.fake_github.spec import package_member

#: Pinned so the tests' notion of a valid payload does not move under them.
WEBHOOKS_PACKAGE = "@octokit/openapi-webhooks@12.1.0"
EXAMPLES_PACKAGE = "@octokit/webhooks-examples@7.6.1"


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads(package_member(WEBHOOKS_PACKAGE, "generated/api.github.com.json").read_text("utf-8"))


@lru_cache(maxsize=1)
def _examples() -> dict[str, list[dict]]:
    data = json.loads(package_member(EXAMPLES_PACKAGE, "api.github.com/index.json").read_text("utf-8"))
    return {entry["name"]: entry["examples"] for entry in data}


def schema_name(event: str, action: str | None) -> str:
    """``webhook-pull-request-labeled`` for (``pull_request``, ``labeled``)."""
    parts = [event] + ([action] if action else [])
    return "webhook-" + "-".join(p.replace("_", "-") for p in parts)


@lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    doc = _schemas()
    if name not in doc["components"]["schemas"]:
        raise KeyError(f"no webhook schema {name!r}")
    uri = "urn:github-webhooks"
    registry = Registry().with_resource(uri, Resource(contents=doc, specification=DRAFT202012))
    return jsonschema.Draft202012Validator({"$ref": f"{uri}#/components/schemas/{name}"}, registry=registry)


def errors(event: str, action: str | None, payload: dict) -> list[str]:
    """Ways ``payload`` breaks the published schema of ``event``/``action`` (empty: valid)."""
    out = []
    for err in _validator(schema_name(event, action)).iter_errors(payload):
        out.append(f"{'/'.join(map(str, err.absolute_path)) or '(top)'}: {err.message[:200]}")
    return out


def check(event: str, action: str | None, payload: dict) -> dict:
    """``payload`` if valid, else AssertionError listing the problems."""
    problems = errors(event, action, payload)
    if problems:
        raise AssertionError(f"{event}.{action} payload breaks @octokit/openapi-webhooks:\n  " + "\n  ".join(problems[:10]))
    return payload


def example(event: str, action: str | None = None, index: int = 0) -> dict:
    """A deep copy of the ``index``-th published example of ``event``/``action``."""
    matches = [e for e in _examples()[event] if e.get("action") == action]
    if not matches:
        raise KeyError(f"no published example of {event}.{action}")
    return json.loads(json.dumps(matches[index]))


def _completer():
    """``testkit.fake_github.spec.Spec``'s schema completion (``conform``/``_synthesize``)
    pointed at the webhook description; only its ``$ref`` resolution is needed."""
    from testkit.fake_github.spec import Spec

    spec = Spec.__new__(Spec)
    spec.doc = _schemas()
    return spec


def complete(event: str, action: str | None, payload: dict) -> dict:
    """``payload`` completed to the current schema: missing required properties synthesised,
    values of the wrong type or outside an enum replaced (old examples predate the schema).
    Values that already fit are kept."""
    spec = _completer()
    pointer = f"/components/schemas/{schema_name(event, action)}"
    data = spec.conform(pointer, payload)
    for _ in range(30):
        errs = list(_validator(schema_name(event, action)).iter_errors(data))
        fixable = [e for e in errs if e.validator in ("type", "enum", "const", "format", "required")]
        if not fixable:
            break
        err = fixable[0]
        path = list(err.absolute_path)
        if err.validator == "required":
            before = json.dumps(data, sort_keys=True)
            data = spec.conform(pointer, data)
            if json.dumps(data, sort_keys=True) == before:
                break  # conform cannot fill it (e.g. a required property inside anyOf)
            continue
        value = err.schema.get("const", (err.schema.get("enum") or [None])[0]) if err.validator in ("enum", "const") \
            else spec._synthesize(err.schema, 1)
        if not path:
            break
        node = data
        for token in path[:-1]:
            node = node[token]
        node[path[-1]] = value
    return data


def published_events() -> dict[str, str]:
    """Every event/action the published description documents → its schema's name:
    ``{"pull_request.labeled": "webhook-pull-request-labeled", "push": "webhook-push", ...}``
    (from each webhook's ``operationId``, ``pull-request/labeled``, and its request body)."""
    out = {}
    for hook in _schemas()["webhooks"].values():
        post = hook["post"]
        event, _, action = post["operationId"].partition("/")
        ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        out[event_key(event.replace("-", "_"), action.replace("-", "_") or None)] = ref.rsplit("/", 1)[-1]
    return out


def reduced(handles) -> dict:
    """The copy the App ships (``bot/app/schemas/webhooks.json``): the published schemas of the
    event/actions for which ``handles(event, action)`` is true, with every component they
    reference (transitively), unchanged.

    Regenerate it with ``python -m testkit.webhook_schemas --write-reduced``.
    """
    doc = _schemas()
    components = doc["components"]["schemas"]
    events = {}
    for key, name in published_events().items():
        event, _, action = key.partition(".")
        if handles(event, action or None):
            events[key] = name
    keep: set[str] = set()
    pending = list(events.values())
    while pending:
        name = pending.pop()
        if name in keep:
            continue
        keep.add(name)
        pending.extend(_refs(components[name]))
    info = doc["info"]
    return {"info": {"title": info["title"], "version": info["version"], "license": info["license"]["name"],
                     "source": f"npm {WEBHOOKS_PACKAGE}, generated/api.github.com.json (reduced)"},
            "events": dict(sorted(events.items())),
            "components": {"schemas": {name: components[name] for name in sorted(keep)}}}


def _refs(node) -> list[str]:
    """Names of the components ``node`` references directly or through its children."""
    if isinstance(node, dict):
        found = [node["$ref"].rsplit("/", 1)[-1]] if isinstance(node.get("$ref"), str) else []
        return found + [name for value in node.values() for name in _refs(value)]
    if isinstance(node, list):
        return [name for value in node for name in _refs(value)]
    return []


def write_reduced() -> None:
    """Write :func:`reduced` for the App's router and the package's licence to ``bot/app/schemas/``."""
    from bot.app.core.handlers import handled
    from bot.app.core.payloads import SCHEMAS

    target = Path(str(SCHEMAS))
    target.write_text(json.dumps(reduced(handled), sort_keys=True, separators=(",", ":")) + "\n", "utf-8")
    shutil.copyfile(package_member(WEBHOOKS_PACKAGE, "LICENSE"), target.parent / "LICENSE")


if __name__ == "__main__":  # prefetch for CI; --write-reduced: regenerate the App's copy
    print(package_member(WEBHOOKS_PACKAGE, "generated/api.github.com.json"))
    print(package_member(EXAMPLES_PACKAGE, "api.github.com/index.json"))
    print(package_member(WEBHOOKS_PACKAGE, "LICENSE"))
    if "--write-reduced" in sys.argv[1:]:
        write_reduced()
