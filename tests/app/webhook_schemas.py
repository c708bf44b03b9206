"""GitHub's published webhook schemas and examples, fetched with ``npm pack`` (data, not code).

- ``@octokit/openapi-webhooks`` (``generated/api.github.com.json``, OpenAPI 3.1: JSON Schema
  2020-12, one ``webhook-<event>-<action>`` schema per event and action);
- ``@octokit/webhooks-examples`` (``api.github.com/index.json``: real example deliveries).

Cached under ``tests/.cache/`` like the REST description of ``tests/fake_github/spec.py``
(prefetch: ``python -m tests.app.webhook_schemas``). Payload builders start from an example
and must end valid against the schema (:func:`check`).
"""

from __future__ import annotations

import json
from functools import lru_cache

from tests.fake_github.spec import package_member

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
    """``tests.fake_github.spec.Spec``'s schema completion (``conform``/``_synthesize``)
    pointed at the webhook description; only its ``$ref`` resolution is needed."""
    from tests.fake_github.spec import Spec

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


if __name__ == "__main__":  # prefetch for CI
    print(package_member(WEBHOOKS_PACKAGE, "generated/api.github.com.json"))
    print(package_member(EXAMPLES_PACKAGE, "api.github.com/index.json"))
