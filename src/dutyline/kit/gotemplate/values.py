"""How Go values are modelled in Python.

JSON-like data maps onto the types Go gives `encoding/json` output decoded into `any`:
dict -> map[string]interface {}, list -> []interface {}, str -> string, bool -> bool,
float -> float64, None -> nil. A Python int is a Go `int` (template constants, `len`, and
Unix times of the incident data); data that came from JSON numbers should hold floats, as
Go's decoder makes every number a float64. MISSING is Go's invalid reflect.Value: what a
missing map key yields, printed `<no value>`.
"""

from __future__ import annotations

from typing import Any, Final


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


class GoUint8(int):
    """A byte (what `index` of a string yields)."""


def type_name(v: Any) -> str:
    if v is None or v is MISSING:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, GoUint8):
        return "uint8"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list | tuple):
        return "[]interface {}"
    return type(v).__name__


def to_any(v: Any) -> Any:
    """A value passed to a parameter of type `any`: an invalid value becomes nil."""
    return None if v is MISSING else v
