"""GitHub's REST OpenAPI description (npm ``@octokit/openapi``): fetch, load, match, validate.

The description is data, not code: ``npm pack`` downloads the package tarball into a cache
folder (``tests/.cache/`` by default, ``PERFGATE_TEST_CACHE`` to move it) and this module
extracts ``generated/api.github.com.json`` (OpenAPI 3.0.3, ~13 MB) from it once.

Prefetch (what CI runs before pytest, so tests never wait on the network)::

    python -m testkit.fake_github

Request checking is the point of the fake: an operation must exist for the method and path,
path parameters must fit their schema, query parameter names must be documented, and a JSON
body must validate against the operation's request schema (OpenAPI 3.0 ``nullable`` mapped
onto JSON Schema ``null``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

#: Pinned so the fake's notion of "documented" does not move under the tests.
OPENAPI_PACKAGE = os.environ.get("PERFGATE_OPENAPI_PACKAGE", "@octokit/openapi@23.0.2")
SPEC_MEMBER = "package/generated/api.github.com.json"
SPEC_URI = "urn:github-rest-openapi"
REPO_ROOT = Path(__file__).resolve().parents[2]


class SpecUnavailable(RuntimeError):
    """The OpenAPI description is not cached and could not be fetched (no npm, no network)."""


def cache_dir() -> Path:
    """``$PERFGATE_TEST_CACHE`` or ``<repo>/tests/.cache`` (git-ignored)."""
    return Path(os.environ.get("PERFGATE_TEST_CACHE", REPO_ROOT / "tests" / ".cache"))


def openapi_path(package: str = OPENAPI_PACKAGE) -> Path:
    """Path of the extracted ``api.github.com.json``, fetching it with ``npm pack`` if absent.

    Raises:
        SpecUnavailable: npm is missing or ``npm pack`` failed (message says which).
    """
    return package_member(package, SPEC_MEMBER.removeprefix("package/"))


def package_member(package: str, member: str) -> Path:
    """Path of ``member`` (inside the npm package's ``package/`` folder) in the cache, fetched
    with ``npm pack`` when absent (shared by every test that needs published GitHub data).

    Raises:
        SpecUnavailable: npm is missing or ``npm pack`` failed (message says which).
    """
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", package.lstrip("@"))
    target = cache_dir() / slug / Path(member).name
    if target.is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise SpecUnavailable(f"npm is not installed and {target} is not cached; run `npm pack {package}` "
                              f"and extract package/{member} there")
    target.parent.mkdir(parents=True, exist_ok=True)
    ignore = cache_dir() / ".gitignore"
    if not ignore.exists():  # the cache ignores itself, as .pytest_cache does
        ignore.write_text("# downloaded test data (npm pack); see testkit/fake_github/spec.py\n*\n")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        proc = subprocess.run([npm, "pack", package, "--pack-destination", tmp, "--silent"],
                              capture_output=True, text=True, timeout=600)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if proc.returncode != 0 or not tarballs:
            raise SpecUnavailable(f"`npm pack {package}` failed: {(proc.stderr or proc.stdout).strip()[-500:]}")
        with tarfile.open(tarballs[0]) as tar:
            extracted = tar.extractfile(tar.getmember(f"package/{member}"))
            assert extracted is not None
            partial = Path(tmp) / target.name
            partial.write_bytes(extracted.read())
        os.replace(partial, target)  # atomic: concurrent test processes see all or nothing
    return target


def _nullable_to_null(node: Any) -> Any:
    """OpenAPI 3.0 ``nullable: true`` rewritten as JSON Schema (``type: [T, "null"]``)."""
    if isinstance(node, list):
        return [_nullable_to_null(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable_to_null(v) for k, v in node.items()}
    if out.pop("nullable", False) is True:
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + ["null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = out["enum"] + [None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass
class Operation:
    """One documented operation: ``method`` upper-case, ``template`` like ``/repos/{owner}/{repo}``."""

    method: str
    template: str
    operation_id: str
    pointer: str  # JSON pointer of the operation object inside the spec
    raw: dict
    path_params: dict[str, dict] = field(default_factory=dict)   # name -> schema
    query_params: dict[str, dict] = field(default_factory=dict)  # name -> schema
    regex: re.Pattern = field(default=None)  # type: ignore[assignment]

    @property
    def success_status(self) -> int:
        codes = sorted(int(c) for c in self.raw.get("responses", {}) if c.isdigit() and c.startswith("2"))
        return codes[0] if codes else 200


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Spec:
    """The loaded description with operation matching and request validation."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.registry = Registry().with_resource(SPEC_URI, Resource(contents=doc, specification=DRAFT4))
        self.operations: list[Operation] = []
        for template, item in doc["paths"].items():
            common = item.get("parameters", [])
            for method, op in item.items():
                if method not in ("get", "post", "put", "patch", "delete", "head"):
                    continue
                operation = Operation(method.upper(), template, op.get("operationId", f"{method} {template}"),
                                      f"/paths/{_escape_pointer(template)}/{method}", op)
                for param in common + op.get("parameters", []):
                    param = self.deref(param)
                    bucket = {"path": operation.path_params, "query": operation.query_params}.get(param["in"])
                    if bucket is not None:
                        bucket[param["name"]] = param.get("schema", {})
                pattern = re.sub(r"\\\{([A-Za-z0-9_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
                operation.regex = re.compile(f"^{pattern}$")
                self.operations.append(operation)
        # Literal segments win over parameters: /repos/{o}/{r}/issues/comments before .../issues/{n}.
        self.operations.sort(key=lambda o: (-o.template.count("/"), o.template.count("{")))
        self._by_id = {o.operation_id: o for o in self.operations}

    def deref(self, node: Any) -> Any:
        """Follow a local ``$ref`` (``#/components/...``) until a plain node."""
        while isinstance(node, dict) and "$ref" in node:
            node = self.resolve_pointer(node["$ref"].lstrip("#"))
        return node

    def resolve_pointer(self, pointer: str) -> Any:
        node: Any = self.doc
        for token in pointer.strip("/").split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def operation(self, operation_id: str) -> Operation:
        return self._by_id[operation_id]

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation documented for ``method`` and ``path`` and its path parameters, or None."""
        for op in self.operations:
            if op.method != method.upper():
                continue
            m = op.regex.match(path)
            if m:
                return op, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
        return None

    def _validator(self, pointer: str) -> jsonschema.Draft4Validator:
        return _cached_validator(self, pointer)

    def schema_errors(self, pointer: str, instance: Any) -> list[str]:
        """Validation errors of ``instance`` against the schema at JSON ``pointer`` (``path: message``)."""
        errors = []
        for err in sorted(self._validator(pointer).iter_errors(instance), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in err.absolute_path) or "(body)"
            errors.append(f"{where}: {err.message[:300]}")
        return errors

    def request_errors(self, op: Operation, path_params: dict[str, str], query: dict[str, list[str]],
                       body: Any, has_body: bool) -> list[str]:
        """Everything about a request that GitHub's description does not allow (empty if fine)."""
        problems = []
        for name, value in path_params.items():
            schema = self.deref(op.path_params.get(name, {}))
            if schema.get("type") == "integer" and not re.fullmatch(r"-?\d+", value):
                problems.append(f"path parameter {name}={value!r} is not an integer")
            if "enum" in schema and value not in schema["enum"]:
                problems.append(f"path parameter {name}={value!r} is not one of {schema['enum']}")
        for name, values in query.items():
            if name not in op.query_params:
                problems.append(f"query parameter {name!r} is not documented for {op.operation_id}")
                continue
            schema = self.deref(op.query_params[name])
            for value in values:
                if schema.get("type") == "integer" and not re.fullmatch(r"-?\d+", value):
                    problems.append(f"query parameter {name}={value!r} is not an integer")
                if "enum" in schema and value not in schema["enum"]:
                    problems.append(f"query parameter {name}={value!r} is not one of {schema['enum']}")
        request_body = self.deref(op.raw.get("requestBody")) if op.raw.get("requestBody") else None
        if request_body is None:
            if has_body and body not in (None, {}, ""):
                problems.append(f"{op.operation_id} takes no request body")
            return problems
        content = request_body.get("content", {})
        if "application/json" not in content:
            return problems  # binary uploads and the like: not checked
        if not has_body:
            if request_body.get("required"):
                problems.append(f"{op.operation_id} requires a JSON body")
            return problems
        pointer = f"{op.pointer}/requestBody/content/application~1json/schema"
        if "$ref" in op.raw["requestBody"]:
            ref = op.raw["requestBody"]["$ref"].lstrip("#")
            pointer = f"{ref}/content/application~1json/schema"
        problems += [f"body {e}" for e in self.schema_errors(pointer, body)]
        return problems

    def response_pointer(self, op: Operation, status: int) -> str | None:
        """JSON pointer of the JSON schema of ``op``'s response ``status``, or None."""
        response = op.raw.get("responses", {}).get(str(status))
        if response is None:
            return None
        pointer = f"{op.pointer}/responses/{status}"
        if "$ref" in response:
            pointer = response["$ref"].lstrip("#")
            response = self.deref(response)
        if "application/json" not in response.get("content", {}):
            return None
        return f"{pointer}/content/application~1json/schema"

    def conform(self, pointer: str, data: Any) -> Any:
        """``data`` with every missing required property filled in from the schema at ``pointer``.

        GitHub's documented examples omit some properties their own schemas require; the fake
        answers with complete, schema-shaped data so clients never meet a shape GitHub would
        not send. Values present in ``data`` are kept.
        """
        return self._conform(self.resolve_pointer(pointer.lstrip("#")), data, 0)

    def _conform(self, schema: Any, data: Any, depth: int) -> Any:
        schema = self.deref(schema)
        if not isinstance(schema, dict) or depth > 12:
            return data
        if "allOf" in schema:
            for part in schema["allOf"]:
                data = self._conform(part, data, depth + 1)
            return data
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [self.deref(o) for o in schema[key]]
                if data is None and any(o.get("type") == "null" for o in options):
                    return None
                for option in options:
                    if data is None or self._fits_type(option, data):
                        return self._conform(option, data, depth + 1)
                return self._conform(options[0], data, depth + 1) if options else data
        types = schema.get("type")
        types = types if isinstance(types, list) else [types] if types else []
        if data is None:
            if "null" in types and depth > 0:
                return None
            return self._synthesize(schema, depth)
        if isinstance(data, dict) and ("object" in types or "properties" in schema):
            props = schema.get("properties", {})
            out = dict(data)
            for name in schema.get("required", []):
                if name not in out:
                    out[name] = self._synthesize(props.get(name, {}), depth + 1)
            for name, value in list(out.items()):
                if name in props:
                    out[name] = self._conform(props[name], value, depth + 1)
            return out
        if isinstance(data, list) and "items" in schema:
            return [self._conform(schema["items"], v, depth + 1) for v in data]
        return data

    @staticmethod
    def _fits_type(schema: dict, data: Any) -> bool:
        types = schema.get("type")
        if types is None:
            return True
        types = types if isinstance(types, list) else [types]
        kind = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
                int: "integer", float: "number"}.get(type(data), "object")
        return kind in types or (kind == "integer" and "number" in types)

    def _synthesize(self, schema: Any, depth: int) -> Any:
        """A minimal value valid against ``schema`` (null where allowed, else zero-ish)."""
        schema = self.deref(schema)
        if not isinstance(schema, dict) or depth > 12:
            return None
        if "allOf" in schema:
            out: Any = None
            for part in schema["allOf"]:
                out = self._conform(part, out if out is not None else {}, depth + 1)
            return out
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self._synthesize(schema[key][0], depth + 1)
        types = schema.get("type")
        types = types if isinstance(types, list) else [types] if types else ["object"]
        if "null" in types:
            return None
        if "enum" in schema:
            return schema["enum"][0]
        kind = types[0]
        if kind == "object":
            return self._conform(schema, {}, depth)
        if kind == "array":
            return []
        if kind == "string":
            return {"date-time": "2026-01-01T00:00:00Z", "uri": "https://example.com/",
                    "email": "octocat@example.com"}.get(schema.get("format"), "")
        return {"integer": 0, "number": 0, "boolean": False}.get(kind)

    def example_response(self, op: Operation, status: int | None = None) -> Any:
        """The documented example body of ``op``'s success response (None for an empty one)."""
        status = status or op.success_status
        response = self.deref(op.raw.get("responses", {}).get(str(status), {}))
        content = response.get("content", {}).get("application/json")
        if not content:
            return None
        for example in (content.get("examples") or {}).values():
            example = self.deref(example)
            if "value" in example:
                return json.loads(json.dumps(example["value"]))
        if "example" in content:
            return json.loads(json.dumps(content["example"]))
        return None


@lru_cache(maxsize=4096)
def _cached_validator_inner(spec_id: int, pointer: str) -> jsonschema.Draft4Validator:
    spec = _SPECS[spec_id]
    return jsonschema.Draft4Validator({"$ref": f"{SPEC_URI}#{pointer}"}, registry=spec.registry)


_SPECS: dict[int, Spec] = {}


def _cached_validator(spec: Spec, pointer: str) -> jsonschema.Draft4Validator:
    _SPECS[id(spec)] = spec
    return _cached_validator_inner(id(spec), pointer)


@lru_cache(maxsize=1)
def load_spec(path: str | None = None) -> Spec:
    """The parsed description (cached per process; ~2 s the first time)."""
    file = Path(path) if path else openapi_path()
    doc = json.loads(file.read_text("utf-8"))
    return Spec(_nullable_to_null(doc))
