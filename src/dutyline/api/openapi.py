"""OpenAPI 3.1 generated from the same msgspec types that validate requests."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec

from dutyline import __version__
from dutyline.api import openapi_examples, openapi_words
from dutyline.api.errors import STATUS_BY_CODE
from dutyline.api.openapi_areas import area_of, tags
from dutyline.api.operation import Operation
from dutyline.api.types import MAX_INT64, MIN_INT64

_REF = "#/components/schemas/{name}"


def build(operations: list[Operation]) -> dict[str, Any]:
    types: list[Any] = []
    for op in operations:
        types.append(op.request_type)
        if op.response_type is not None:
            types.append(op.response_type)
    schemas, components = msgspec.json.schema_components(types, ref_template=_REF)
    schema_of = dict(zip(map(id, types), schemas, strict=True))

    components["ErrorCode"] = {"type": "string", "enum": list(STATUS_BY_CODE),
                               "description": "What went wrong, one of the API's error codes."}
    components["Error"] = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {"code": {"$ref": _REF.format(name="ErrorCode"),
                                "description": "The error code."},
                       "message": {"type": "string", "description": (
                           "What went wrong, in the language of `Accept-Language` (English "
                           "or Chinese); an `InvalidParameter` names the field.")}},
    }
    components["ErrorEnvelope"] = {
        "type": "object",
        "required": ["request_id", "error"],
        "properties": {"request_id": {"type": "string", "description": _REQUEST_ID},
                       "error": {"$ref": _REF.format(name="Error"),
                                 "description": "The failure."}},
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
                    "properties": {
                        "request_id": {"type": "string", "description": _REQUEST_ID},
                        "data": {**data_schema, "description": "The operation's answer."}},
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
            "tags": [area_of(op.path) or op.tag],
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
    for schema in components.values():
        _plain_int64(schema)
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "dutyline API", "version": __version__, "description": _INTRO},
        "tags": tags(),
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "AppKeyAuth": {"type": "apiKey", "in": "query", "name": "app_key"}
            },
        },
    }
    openapi_words.describe(spec, {op.path: _docstring(op) for op in operations})
    openapi_examples.attach(spec)
    return spec


_REQUEST_ID = "The request's id, also in the `Service-Request-Id` header: quote it when asking."
_INTRO = (
    "## Calling the API\n\nEvery operation is a `POST` with a JSON body, authenticated by "
    "the `app_key` query parameter (an app key made in the console or with "
    "`/app-key/create`). It answers "
    "`{request_id, data}`, or `{request_id, error: {code, message}}` with the HTTP status of "
    "the error. Times are Unix seconds unless a field says milliseconds. Rate limits: 50 "
    "requests a second and 1,000 a minute per account (`429 RequestTooFrequently`, with "
    "`Retry-After`). Machine-readable: [/openapi.json](/openapi.json).\n\n"
    "To try a call here, press **Authorize** and type an app key: the page keeps it in its "
    "memory only, until it is closed.")


def _docstring(op: Operation) -> str:
    return " ".join((inspect.getdoc(op.handler) or "").split())


def _plain_int64(schema: Any) -> None:
    """Say `int64` rather than spelling out its range, which only hides a real limit."""
    if isinstance(schema, dict):
        if schema.get("type") == "integer" and schema.get("maximum") == MAX_INT64:
            del schema["maximum"]
            schema["format"] = "int64"
            if schema.get("minimum") == MIN_INT64:
                del schema["minimum"]
        for value in schema.values():
            _plain_int64(value)
    elif isinstance(schema, list):
        for value in schema:
            _plain_int64(value)


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
