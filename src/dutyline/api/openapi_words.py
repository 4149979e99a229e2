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
                kinds = [k for k in schema.get("anyOf", schema.get("oneOf", []))
                         if k.get("type") != "null"]
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
    for schema_name, schema in components.items():
        for name, field in (schema.get("properties") or {}).items():
            if "description" in field:
                continue
            words = (FIELDS_OF.get(f"{schema_name}.{name}") or FIELDS.get(name)
                     or by_name.get(name))
            if words:
                field["description"] = words
    for item in spec["paths"].values():
        for parameter in item.get("get", {}).get("parameters", []):
            body = mine(_body(item["post"]))
            field = body.get("properties", {}).get(parameter["name"], {})
            parameter["description"] = field.get("description", "")


def undescribed(spec: dict[str, Any]) -> list[str]:
    """Every operation and field of `spec` without a description ("Schema.field")."""
    missing = [f"{m.upper()} {p}" for p, item in spec["paths"].items()
               for m, op in item.items() if not op.get("description")]
    for schema_name, schema in spec["components"]["schemas"].items():
        missing += [f"{schema_name}.{name}" for name, field in
                    (schema.get("properties") or {}).items() if not field.get("description")]
    return missing
