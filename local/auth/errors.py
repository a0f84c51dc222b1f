"""GoTrue's errors: status, `error_code` and message, in the shape the client's API version asks.

`internal/api/errors.go` (`HandleResponseError`): a request with `X-Supabase-Api-Version` of
2024-01-01 or later (supabase-js sends it) gets `{"code": <error_code>, "message": …}` and the
version echoed back; any other gets the initial shape `{"code": <status>, "error_code": …,
"msg": …}`. Both carry the `x-sb-error-code` header. A weak password adds `weak_password:
{"reasons": [...]}`.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

API_VERSION_HEADER = "X-Supabase-Api-Version"
API_VERSION_2024 = "2024-01-01"


class AuthError(Exception):
    """An `apierrors.HTTPError`: what GoTrue answers, and why."""

    def __init__(
        self, status: int, code: str, message: str, *, weak_password: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.weak_password = weak_password
        """The reasons of a `WeakPasswordError` (`length`, `characters`, `pwned`)."""


def bad_request(code: str, message: str) -> AuthError:
    return AuthError(400, code, message)


def unprocessable(code: str, message: str) -> AuthError:
    return AuthError(422, code, message)


def forbidden(code: str, message: str) -> AuthError:
    return AuthError(403, code, message)


def not_found(code: str, message: str) -> AuthError:
    return AuthError(404, code, message)


def error_response(request: Request, error: AuthError) -> JSONResponse:
    """The response GoTrue sends for `error`, in the caller's API version."""
    headers = {"x-sb-error-code": error.code}
    body: dict[str, Any]
    if _api_2024(request):
        headers[API_VERSION_HEADER] = API_VERSION_2024
        body = {"code": error.code, "message": error.message}
    else:
        body = {"code": error.status, "error_code": error.code, "msg": error.message}
    if error.weak_password is not None:
        body["weak_password"] = {"reasons": error.weak_password}
    return JSONResponse(body, status_code=error.status, headers=headers)


def _api_2024(request: Request) -> bool:
    # DetermineClosestAPIVersion: a YYYY-MM-DD date on or after 2024-01-01; anything else is
    # the initial version.
    version = request.headers.get(API_VERSION_HEADER, "")
    return len(version) == 10 and version[4] == version[7] == "-" and version >= API_VERSION_2024
