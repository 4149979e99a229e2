"""Write-only request fields: the one marker that says a field holds a secret, and what the
audit log keeps of a request body.

A request Struct marks its secret fields on the type, where the field is declared:

    password: Annotated[str, SECRET] = ""
    settings: Annotated[dict[str, Any], secret_keys("secret", "token")]   # an open map

`for_audit` walks a decoded JSON body by the request type's msgspec type info: marked values
become "***", keys the type does not know are left out (the operation ignores them too), and
open maps keep their other keys. No list of names decides what is secret. The address of an
outbound target (marked `OUTBOUND_URL`, or the URL key of an `outbound_settings` map) keeps
its shape with the credentials it carries masked (kit/url_secrets.py): `?access_token=`, the
userinfo.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import inspect as mi

from dutyline.api.outbound_secrets import OUTBOUND_MARK
from dutyline.kit.url_secrets import mask_url

SECRET = msgspec.Meta(extra={"secret": True})
MASK = "***"


def secret_keys(*keys: str) -> msgspec.Meta:
    """The marker of an open map (`dict[str, Any]`) whose listed keys hold secrets."""
    return msgspec.Meta(extra={"secret_keys": tuple(keys)})


# The shape of a type, as far as the audit copy cares: None keeps a value as it is.
#   ("mask",)                       a secret
#   ("url",)                        an address: the credentials inside it masked
#   ("struct", {name: shape})       a Struct: known keys only
#   ("list", shape)                 each item
#   ("map", shape, secret keys, url keys)  each value; the secret keys masked, the url keys'
#                                   credentials masked
Shape = tuple[Any, ...] | None
_MASK: Shape = ("mask",)
_URL: Shape = ("url",)


def _merge(a: Shape, b: Shape) -> Shape:
    if a is None or b is None:
        return a if b is None else b
    if a == _MASK or b == _MASK:
        return _MASK
    if a == _URL or b == _URL:
        return _URL
    if a[0] == b[0] == "struct":
        fields = dict(a[1])
        for name, shape in b[1].items():
            fields[name] = _merge(fields.get(name), shape) if name in fields else shape
        return ("struct", fields)
    if a[0] == b[0] == "list":
        return ("list", _merge(a[1], b[1]))
    if a[0] == b[0] == "map":
        return ("map", _merge(a[1], b[1]), a[2] | b[2], a[3] | b[3])
    return a if a[0] == "struct" else b  # a JSON object read as the Struct alternative


def _shape(t: mi.Type, active: frozenset[type]) -> Shape:
    if isinstance(t, mi.Metadata):
        extra = t.extra or {}
        if extra.get("secret"):
            return _MASK
        mark = extra.get(OUTBOUND_MARK)
        if mark == "url":
            return _URL
        inner = _shape(t.type, active)
        keys = extra.get("secret_keys")
        urls = frozenset([extra["url"]] if mark == "settings" else [])
        if keys or urls:
            values = inner[1] if inner is not None and inner[0] == "map" else None
            return ("map", values, frozenset(keys or ()), urls)
        return inner
    if isinstance(t, mi.StructType):
        if t.cls in active:
            return None  # a recursive Struct: its inner levels are kept as they are
        inside = active | {t.cls}
        return ("struct", {f.encode_name: _shape(f.type, inside) for f in t.fields})
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        item = _shape(t.item_type, active)
        return None if item is None else ("list", item)
    if isinstance(t, mi.TupleType):
        merged: Shape = None
        for x in t.item_types:
            merged = _merge(merged, _shape(x, active))
        return None if merged is None else ("list", merged)
    if isinstance(t, mi.DictType):
        value = _shape(t.value_type, active)
        return None if value is None else ("map", value, frozenset(), frozenset())
    if isinstance(t, mi.UnionType):
        out: Shape = None
        for x in t.types:
            out = _merge(out, _shape(x, active))
        return out
    return None


@functools.cache
def audit_shape(request_type: Any) -> Shape:
    return _shape(mi.type_info(request_type), frozenset())


def _masked(value: Any) -> Any:
    return value if value in ("", None) else MASK


# Inside a value the request type leaves free-form (`Any`, an open map, the inner levels of
# a recursive Struct) no field is marked; a key named like a credential is masked there too.
FREE_FORM_SECRET_KEYS = frozenset({
    "api_key", "app_key", "token", "password", "secret", "headers", "auth_config",
    "http_post_token", "integration_key", "authorization", "client_secret", "sign_secret",
    "verify_token", "basic_auth_password", "tls_key", "tls_key_pwd",
})


# ... and a key naming an address keeps it with its credentials masked.
FREE_FORM_URL_KEYS = frozenset({"url", "webhook", "webhook_url", "address", "endpoint"})


def _url(value: Any) -> Any:
    return mask_url(value) if isinstance(value, str) else value


def _free_form(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v) if str(k).lower() in FREE_FORM_SECRET_KEYS
                else _url(v) if str(k).lower() in FREE_FORM_URL_KEYS else _free_form(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_free_form(v) for v in value]
    return value


def _apply(value: Any, shape: Shape) -> Any:
    if shape is None:
        return _free_form(value)
    kind = shape[0]
    if kind == "mask":
        return _masked(value)
    if kind == "url":
        return _url(value)
    if kind == "struct":
        if not isinstance(value, dict):
            return value
        fields = shape[1]
        return {k: _apply(v, fields[k]) for k, v in value.items() if k in fields}
    if kind == "list":
        return [_apply(v, shape[1]) for v in value] if isinstance(value, list) else value
    if not isinstance(value, dict):
        return value
    child, keys, urls = shape[1], shape[2], shape[3]
    return {k: _masked(v) if k in keys else _url(v) if k in urls else _apply(v, child)
            for k, v in value.items()}


def for_audit(value: Any, request_type: Any) -> Any:
    """A decoded JSON body as the audit log keeps it (see the module's docstring)."""
    return _apply(value, audit_shape(request_type))


def secret_paths(request_type: Any) -> list[str]:
    """The marked fields of a request type, as paths: `config.prometheus.tls_key`,
    `layers[].target.webhooks[].settings{sign_secret}` (a secret key of an open map)."""
    out: list[str] = []

    def walk(shape: Shape, path: str) -> None:
        if shape is None:
            return
        if shape == _MASK:
            out.append(path)
        elif shape == _URL:
            return
        elif shape[0] == "struct":
            for name, inner in shape[1].items():
                walk(inner, f"{path}.{name}" if path else name)
        elif shape[0] == "list":
            walk(shape[1], f"{path}[]")
        else:
            out.extend(f"{path}{{{key}}}" for key in sorted(shape[2]))
            walk(shape[1], f"{path}{{}}")

    walk(audit_shape(request_type), "")
    return out


def _has_mask(shape: Shape) -> bool:
    if shape is None:
        return False
    if shape == _MASK:
        return True
    if shape == _URL:
        return False
    if shape[0] == "struct":
        return any(_has_mask(s) for s in shape[1].values())
    if shape[0] == "list":
        return _has_mask(shape[1])
    return bool(shape[2]) or _has_mask(shape[1])


def holds_secret(field_type: mi.Type) -> bool:
    """Whether a field of this type is marked: itself, its items or values, some keys of it,
    or fields of a Struct inside it."""
    return _has_mask(_shape(field_type, frozenset()))
