"""Permission factors: the fine-grained controls a permission is made of (reference
/role/permission/factor/list). Here they are the served API operations, one `api` factor
each, named `<resource>:<read|write>:<action>` after the operation's path: `/template/info`
is `template:read:info`, `/role/member/grant` is `role:write:member-grant`. The console's
pages check the same services, so there are no `button`, `menu`, `url` or `visit` factors
of their own."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dutyline.api.runtime import ServedOperation
from dutyline.platform.role.schemas import FactorType, PermissionFactorItem

API_FACTOR: FactorType = "api"


def factor_name(path: str, *, write: bool) -> str:
    resource, _, rest = path.strip("/").partition("/")
    action = rest.replace("/", "-") or resource
    return f"{resource}:{'write' if write else 'read'}:{action}"


def permission_factors(operations: Iterable[ServedOperation], *,
                       factor_types: Sequence[str] | None) -> list[PermissionFactorItem]:
    """Every factor, or those of the given types (none given, or an empty list: all)."""
    if factor_types and API_FACTOR not in factor_types:
        return []
    names = {factor_name(op.path, write=op.write) for op in operations}
    return [PermissionFactorItem(factor_name=n, factor_type=API_FACTOR) for n in sorted(names)]
