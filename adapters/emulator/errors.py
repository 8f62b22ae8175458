"""API errors as the real apiserver phrases them.

Every failure leaves the emulator as a ``metav1.Status`` body, so a client sees
the same ``ApiException.status``, ``reason`` and message text it would get from
a real kube-apiserver. The constructors mirror ``k8s.io/apimachinery/pkg/api/errors``.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


class ApiError(Exception):
    """A request failure that is answered with a ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JSON | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> JSON:
        """The wire form; ``details`` is omitted when absent, as Go's omitempty does."""
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(name: str, group: str, kind: str) -> JSON:
    out: JSON = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    if kind:
        out["kind"] = kind
    return out


def qualified(plural: str, group: str) -> str:
    """``pods`` or ``workloads.kueue.x-k8s.io``: how GroupResource prints."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(plural, group)} "{name}" not found',
        _details(name, group, plural),
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(plural, group)} "{name}" already exists',
        _details(name, group, plural),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        _details(name, group, plural),
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version "
    "and try again"
)


def stale(plural: str, group: str, name: str) -> ApiError:
    """The optimistic-concurrency failure every controller retries on."""
    return conflict(plural, group, name, STALE)


def invalid(
    kind_qualified: str, name: str, causes: list[tuple[str, str, str]]
) -> ApiError:
    """422 with one cause per (field, reason type, message).

    ``kind_qualified`` is ``Pod`` or ``Workload.kueue.x-k8s.io`` as in
    ``NewInvalid``; the message joins the field errors like an aggregate.
    """
    texts = [f"{field}: {msg}" for field, _, msg in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    kind, _, group = kind_qualified.partition(".")
    details = _details(name, group, kind)
    details["causes"] = [
        {"reason": ctype, "message": msg, "field": field}
        for field, ctype, msg in causes
    ]
    return ApiError(
        422, "Invalid", f'{kind_qualified} "{name}" is invalid: {joined}', details
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(plural, group)} "{name}" is forbidden: {why}',
        _details(name, group, plural),
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    """The watch-cache wording for a compacted resourceVersion."""
    return expired(f"too old resource version: {requested} ({oldest})")


def too_many_requests(
    message: str, causes: list[JSON], retry_after: int = 0
) -> ApiError:
    details: JSON = {"causes": causes}
    headers: dict[str, str] = {}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
        headers["Retry-After"] = str(retry_after)
    return ApiError(429, "TooManyRequests", message, details, headers)


def internal(why: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {why}",
        {"causes": [{"message": why}]},
    )


def service_unavailable(why: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", why)


def timeout(message: str, retry_after: int = 1) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        message,
        {"retryAfterSeconds": retry_after},
        {"Retry-After": str(retry_after)},
    )


def resource_missing() -> ApiError:
    """Unknown path or resource: the generic 404 of the apiserver's mux."""
    return ApiError(
        404, "NotFound", "the server could not find the requested resource", {}
    )


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def unsupported_media(accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types "
        "include: " + ", ".join(accepted),
    )


PATCH_REJECTED = "the server rejected our request due to an error in our request"


def patch_not_applied() -> ApiError:
    """What a failed JSON-patch ``test`` or bad pointer yields (measured: bare 422)."""
    return ApiError(422, "Invalid", PATCH_REJECTED, {})


def unknown(code: int, message: str) -> ApiError:
    """A plain Go error surfacing through the handler: no reason, as upstream."""
    return ApiError(code, "", message)
