"""OpenAPI 3.1 generated from the same msgspec types that validate requests."""

from __future__ import annotations

from typing import Any

import msgspec

from dutyline import __version__
from dutyline.api.errors import STATUS_BY_CODE
from dutyline.api.operation import Operation

_REF = "#/components/schemas/{name}"


def build(operations: list[Operation]) -> dict[str, Any]:
    types: list[Any] = []
    for op in operations:
        types.append(op.request_type)
        if op.response_type is not None:
            types.append(op.response_type)
    schemas, components = msgspec.json.schema_components(types, ref_template=_REF)
    schema_of = dict(zip(map(id, types), schemas, strict=True))

    components["ErrorCode"] = {"type": "string", "enum": list(STATUS_BY_CODE)}
    components["Error"] = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {"code": {"$ref": _REF.format(name="ErrorCode")},
                       "message": {"type": "string"}},
    }
    components["ErrorEnvelope"] = {
        "type": "object",
        "required": ["request_id", "error"],
        "properties": {"request_id": {"type": "string"},
                       "error": {"$ref": _REF.format(name="Error")}},
    }
    paths: dict[str, Any] = {}
    for op in operations:
        data_schema: dict[str, Any]
        if op.response_type is None:
            data_schema = {"type": "null"} if op.empty == "null" else {"type": "object"}
        else:
            data_schema = schema_of[id(op.response_type)]
        error_response = {
            "description": "Error envelope",
            "content": {
                "application/json": {"schema": {"$ref": _REF.format(name="ErrorEnvelope")}}
            },
        }
        responses: dict[str, Any] = {
            "200": {
                "description": "Success envelope",
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["request_id", "data"],
                    "properties": {"request_id": {"type": "string"}, "data": data_schema},
                }}},
            },
            "400": error_response,
            "401": error_response,
            # Any body over the limit (DUTYLINE_MAX_BODY_BYTES, or the operation's own).
            "413": error_response,
            "429": error_response,
            "500": error_response,
        }
        if op.permissions:
            responses["403"] = error_response
        post = {
            "operationId": op.operation_name,
            "summary": op.summary,
            "tags": [op.tag] if op.tag else [],
            "security": [{"AppKeyAuth": []}],
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": schema_of[id(op.request_type)]}},
            },
            "responses": responses,
        }
        if op.permissions:
            post["description"] = "Requires any of the permissions: " + ", ".join(op.permissions)
        if op.download:
            # The file itself unless the client asks for JSON (`Accept: application/json`).
            responses["200"]["content"]["text/csv"] = {"schema": {"type": "string"}}
        paths[op.path] = {"post": post}
        if "GET" in op.methods:
            get = {k: v for k, v in post.items() if k != "requestBody"}
            get["operationId"] = f"{op.operation_name}.get"
            get["parameters"] = _query_parameters(schema_of[id(op.request_type)], components)
            paths[op.path]["get"] = get
    return {
        "openapi": "3.1.0",
        "info": {"title": "dutyline API", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "AppKeyAuth": {"type": "apiKey", "in": "query", "name": "app_key"}
            },
        },
    }


_SCALARS = {"string", "integer", "number", "boolean"}


def _query_parameters(request_schema: dict[str, Any],
                      components: dict[str, Any]) -> list[dict[str, Any]]:
    """The GET form of an operation: each scalar field of its request is a query parameter
    (the server converts them to the request's types, as it does a JSON body's)."""
    schema = request_schema
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    required = set(schema.get("required", ()))
    parameters = []
    for name, field in schema.get("properties", {}).items():
        if not _is_scalar(field):
            continue
        parameters.append({"name": name, "in": "query", "required": name in required,
                           "schema": field})
    return parameters


def _is_scalar(field: dict[str, Any]) -> bool:
    kinds = field.get("anyOf", [field])

    def scalar(kind: dict[str, Any]) -> bool:
        return kind.get("type") in _SCALARS or "enum" in kind

    return all(scalar(k) or k.get("type") == "null" for k in kinds) and any(map(scalar, kinds))
