"""The 20 error codes of the contract and the exceptions services raise.

Services raise; one place (api/handler.py) renders the envelope. A message is an English
format string that doubles as the catalog key for translations (locales/*.po)."""

from __future__ import annotations

from typing import Any, ClassVar

# HTTP status per code, from the reference's ErrorCode table.
STATUS_BY_CODE: dict[str, int] = {
    "OK": 200,
    "InvalidParameter": 400,
    "BadRequest": 400,
    "InvalidContentType": 400,
    "ResourceNotFound": 400,
    "NoLicense": 400,
    "ReferenceExist": 400,
    "Unauthorized": 401,
    "BalanceNotEnough": 402,
    "AccessDenied": 403,
    "RouteNotFound": 404,
    "MethodNotAllowed": 405,
    "UndonedOrderExist": 409,
    "EntityTooLarge": 413,
    "RequestLocked": 423,
    "RequestVerifyRequired": 428,
    "DangerousOperation": 428,
    "RequestTooFrequently": 429,
    "InternalError": 500,
    "ServiceUnavailable": 503,
    # Whole-request failures of the monitor tool operations (/monit/tools/*), codes that
    # published clients of those operations read (spec decisions §10). Each is the caller's
    # to act on: name another target or kind, read the catalogue again, or retry later.
    "target_unavailable": 400,
    "ambiguous_target_kind": 400,
    "unknown_toolset_hash": 400,
    "forward_failed": 400,
}


class ApiError(Exception):
    code: ClassVar[str] = "BadRequest"
    default_message: ClassVar[str] = "Bad request"

    def __init__(self, message: str | None = None, /, **fields: Any) -> None:
        self.message = message or self.default_message
        self.fields = fields
        super().__init__(self.message.format(**fields) if fields else self.message)

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]


class InvalidParameter(ApiError):
    code = "InvalidParameter"
    default_message = "Invalid parameter"


class BadRequest(ApiError):
    code = "BadRequest"


class InvalidContentType(ApiError):
    code = "InvalidContentType"
    default_message = "The request body must be JSON sent with Content-Type: application/json"


class ResourceNotFound(ApiError):
    code = "ResourceNotFound"
    default_message = "Resource not found"


class NoLicense(ApiError):
    code = "NoLicense"
    default_message = "This feature is not licensed"


class ReferenceExist(ApiError):
    code = "ReferenceExist"
    default_message = "The resource is still referenced and cannot be deleted"


class Unauthorized(ApiError):
    code = "Unauthorized"
    default_message = "Missing or invalid app_key"


class BalanceNotEnough(ApiError):
    code = "BalanceNotEnough"
    default_message = "Insufficient balance"


class AccessDenied(ApiError):
    code = "AccessDenied"
    default_message = "You do not have permission for this operation"


class RouteNotFound(ApiError):
    code = "RouteNotFound"
    default_message = "No route for {path}"


class MethodNotAllowed(ApiError):
    code = "MethodNotAllowed"
    default_message = "Method {method} is not allowed on {path}"


class UndonedOrderExist(ApiError):
    code = "UndonedOrderExist"
    default_message = "An unfinished order exists"


class EntityTooLarge(ApiError):
    code = "EntityTooLarge"
    default_message = "The request body is larger than {limit} bytes"


class RequestLocked(ApiError):
    code = "RequestLocked"
    default_message = "The operation is temporarily locked"


class RequestTooFrequently(ApiError):
    code = "RequestTooFrequently"
    default_message = "Too many requests; retry after {retry_after} seconds"


class RequestVerifyRequired(ApiError):
    code = "RequestVerifyRequired"
    default_message = "Verification is required"


class DangerousOperation(ApiError):
    code = "DangerousOperation"
    default_message = "This dangerous operation requires verification"


class InternalError(ApiError):
    code = "InternalError"
    default_message = "Internal error; retry later and quote the request_id"


class ServiceUnavailable(ApiError):
    code = "ServiceUnavailable"
    default_message = "A backend dependency is unavailable; retry later"


class TargetUnavailable(ApiError):
    code = "target_unavailable"
    default_message = "No data source of the account knows the target {target}"


class AmbiguousTargetKind(ApiError):
    code = "ambiguous_target_kind"
    default_message = "The target {target} is of several kinds ({kinds}): name one in target_kind"


class UnknownToolsetHash(ApiError):
    code = "unknown_toolset_hash"
    default_message = ("The toolset_hash {hash} is not the target's current catalogue: read "
                       "/monit/tools/catalog again")


class ForwardFailed(ApiError):
    code = "forward_failed"
    default_message = "The data source {datasource} could not be reached: {reason}"


def invalid(field: str, reason: str = "is invalid") -> InvalidParameter:
    """The common case: a named field is wrong. `reason` is a catalog message too."""
    return InvalidParameter("Invalid parameter {field}: {reason}", field=field, reason=reason)


def not_found(kind: str, ident: object) -> ResourceNotFound:
    return ResourceNotFound("{kind} {id} not found", kind=kind, id=ident)
