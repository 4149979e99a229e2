"""Descriptions for the OpenAPI document: the reference's own words (a copy of
`openapi.en.json` ships in `api/reference/`) for the operations and fields it also describes,
ours (`api/openapi_glossary.py`, or a field's `msgspec.Meta(description=...)`) for the rest.

A field of ours takes the reference's words when it sits at the same place in the same
operation (path, then field names down the request or the response), else the words of our
glossary, else the reference's words for a field of that name wherever it has only one
meaning."""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from dutyline.api.openapi_glossary import FIELDS, FIELDS_OF

REFERENCE = Path(__file__).resolve().parent / "reference" / "openapi.en.json"
Schema = dict[str, Any]


@cache
def reference() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return loaded


class _Resolver:
    def __init__(self, components: dict[str, Schema]) -> None:
        self.components = components

    def __call__(self, schema: Schema) -> Schema:
        """The object or array a schema stands for: through `$ref`, a nullable `anyOf` and
        an `allOf` (merged into one object)."""
        for _ in range(8):
            if "$ref" in schema:
                schema = self.components.get(schema["$ref"].rsplit("/", 1)[-1], {})
            elif "anyOf" in schema or "oneOf" in schema:
                options: list[Schema] = schema.get("anyOf") or schema.get("oneOf") or []
                kinds = [k for k in options if k.get("type") != "null"]
                if len(kinds) != 1:
                    return schema
                schema = kinds[0]
            elif "allOf" in schema:
                merged: Schema = {"type": "object", "properties": {}}
                for part in schema["allOf"]:
                    merged["properties"].update(self(part).get("properties", {}))
                return merged
            else:
                return schema
        return schema


def _copy_words(ours: Schema, theirs: Schema, mine: _Resolver, refs: _Resolver,
                seen: set[tuple[int, int]]) -> None:
    o, t = mine(ours), refs(theirs)
    if (id(o), id(t)) in seen:
        return
    seen.add((id(o), id(t)))
    if "items" in o and "items" in t:
        _copy_words(o["items"], t["items"], mine, refs, seen)
    their_props = t.get("properties") or {}
    for name, field in (o.get("properties") or {}).items():
        if name not in their_props:
            continue
        words = their_props[name].get("description") or refs(their_props[name]).get(
            "description")
        if words and "description" not in field:
            field["description"] = words
        _copy_words(field, their_props[name], mine, refs, seen)


def _reference_names(ref: dict[str, Any]) -> dict[str, str]:
    """A field name whose every description in the reference is the same one."""
    found: dict[str, set[str]] = defaultdict(set)
    for schema in ref["components"]["schemas"].values():
        for name, field in (schema.get("properties") or {}).items():
            if field.get("description"):
                found[name].add(field["description"])
    return {name: next(iter(words)) for name, words in found.items() if len(words) == 1}


def _body(operation: dict[str, Any]) -> Schema:
    schema: Schema = operation.get("requestBody", {}).get("content", {}).get(
        "application/json", {}).get("schema", {})
    return schema


def _answer(operation: dict[str, Any]) -> Schema:
    schema: Schema = operation.get("responses", {}).get("200", {}).get("content", {}).get(
        "application/json", {}).get("schema", {})
    return schema


def describe(spec: dict[str, Any], summaries: dict[str, str]) -> None:
    """Give every operation and field of `spec` a description, in place. `summaries`: our
    own words for an operation the reference does not describe, by path."""
    ref = reference()
    components: dict[str, Schema] = spec["components"]["schemas"]
    mine, refs = _Resolver(components), _Resolver(ref["components"]["schemas"])
    seen: set[tuple[int, int]] = set()
    for path, item in spec["paths"].items():
        theirs = ref["paths"].get(path, {}).get("post")
        post = item["post"]
        words = (theirs or {}).get("description") or summaries.get(path) or post["summary"]
        permits = post.pop("description", "")
        post["description"] = f"{words}\n\n{permits}" if permits else words
        if "get" in item:
            item["get"]["description"] = post["description"]
        if theirs:
            _copy_words(_body(post), _body(theirs), mine, refs, seen)
            _copy_words(_answer(post), _answer(theirs), mine, refs, seen)
    by_name = _reference_names(ref)
    in_millis = _reached(spec, components, MILLISECOND_PREFIXES)
    for schema_name, schema in components.items():
        for name, field in (schema.get("properties") or {}).items():
            if "description" in field:
                continue
            words = (FIELDS_OF.get(f"{schema_name}.{name}") or FIELDS.get(name)
                     or by_name.get(name) or _by_pattern(name, schema_name in in_millis))
            if words:
                field["description"] = words
    for item in spec["paths"].values():
        for parameter in item.get("get", {}).get("parameters", []):
            body = mine(_body(item["post"]))
            field = body.get("properties", {}).get(parameter["name"], {})
            parameter["description"] = field.get("description", "")


# The operations under these paths keep their times in Unix milliseconds (the AI SRE's API
# does); every other operation in Unix seconds.
MILLISECOND_PREFIXES = ("/safari/",)


def _reached(spec: dict[str, Any], components: dict[str, Schema],
             prefixes: tuple[str, ...]) -> set[str]:
    """The component schemas the operations under `prefixes` refer to, directly or not."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in found:
                    found.add(name)
                    walk(components.get(name, {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path, item in spec["paths"].items():
        if path.startswith(prefixes):
            walk(item["post"])
    return found


def _spoken(name: str) -> str:
    return name.replace("_", " ")


def _by_pattern(name: str, millis: bool) -> str:
    """Words for the fields whose name says what they are."""
    unit = "Unix milliseconds" if millis else "Unix seconds"
    if name.endswith("_ids"):
        return f"IDs of the {_spoken(name[:-4])}s."
    if name.endswith("_id"):
        return f"ID of the {_spoken(name[:-3])}."
    if name.endswith("_at_ms"):
        return f"When {_spoken(name[:-6])}, Unix milliseconds; 0: never."
    if name.endswith("_at"):
        return f"When {_spoken(name[:-3])}, {unit}; 0: not yet, or never."
    if name.endswith("_name"):
        return f"Name of the {_spoken(name[:-5])}."
    if name.endswith(("_cnt", "_count")):
        return f"How many {_spoken(name.rsplit('_', 1)[0])}s."
    if name.endswith("_seconds"):
        return f"The {_spoken(name[:-8])}, in seconds."
    if name.endswith("_pct"):
        return f"The {_spoken(name[:-4])} share, a percentage from 0 to 100."
    if name.endswith("_imported"):
        return f"How many {_spoken(name[:-9])} were imported so far."
    if name.endswith("_enabled"):
        return f"Whether the {_spoken(name[:-8])} is on."
    return ""


def undescribed(spec: dict[str, Any]) -> list[str]:
    """Every operation and field of `spec` without a description ("Schema.field")."""
    missing = [f"{m.upper()} {p}" for p, item in spec["paths"].items()
               for m, op in item.items() if not op.get("description")]
    for schema_name, schema in spec["components"]["schemas"].items():
        missing += [f"{schema_name}.{name}" for name, field in
                    (schema.get("properties") or {}).items() if not field.get("description")]
    return missing
