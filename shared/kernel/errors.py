"""Parley's error vocabulary. No HTTP here: `shared.api.problems` maps these to status codes once.

Each class names its `kind`: the problem type a client tells it apart by (`shared.api.problems`
makes it the `type` URI of the problem+json body; `docs/problems.md` lists them). A subclass keeps
its parent's kind unless it is a different problem for a client.

AppError
├── ConfigurationError     a setting is missing or wrong; the message says how to fix it
├── NotFound               the thing does not exist, or belongs to someone else
├── Conflict               the request clashes with the current state (e.g. a turn is running)
├── InvalidInput           the request is well-formed JSON but makes no sense
├── Unauthenticated        no credentials, or credentials that do not verify
│   └── AccountGone        a valid token of a user that no longer exists
├── PermissionDenied       authenticated, but not allowed to do this
├── UpstreamUnavailable    a service this one depends on could not be reached
└── Overloaded             this process runs as many turns as it may; retry after a while
"""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    """Base of every error Parley raises on purpose."""

    title = "Application error"
    kind = "application-error"

    def problem_fields(self) -> dict[str, Any]:
        """Extension members of the error's problem+json body (RFC 9457), for clients to act on."""
        return {}

    def headers(self) -> dict[str, str]:
        """HTTP headers the error's response carries (e.g. `Retry-After`)."""
        return {}


class ConfigurationError(AppError):
    """A required setting is missing or invalid."""

    title = "Configuration error"
    kind = "not-configured"


class NotFound(AppError):
    """The resource does not exist or is not visible to the caller."""

    title = "Not found"
    kind = "not-found"


class Conflict(AppError):
    """The request conflicts with the resource's current state."""

    title = "Conflict"
    kind = "conflict"


class InvalidInput(AppError):
    """The request is syntactically valid but semantically wrong."""

    title = "Invalid input"
    kind = "invalid-input"


class Unauthenticated(AppError):
    """Missing or invalid credentials."""

    title = "Unauthenticated"
    kind = "unauthenticated"


class AccountGone(Unauthenticated):
    """The token verifies, but its user was deleted (Supabase does not revoke such tokens)."""

    title = "Unauthenticated"
    kind = "account-gone"

    def __init__(self) -> None:
        super().__init__("The account this token was issued for no longer exists: sign in again")


class PermissionDenied(AppError):
    """The caller is known but not allowed to perform the action."""

    title = "Permission denied"
    kind = "permission-denied"


class UpstreamUnavailable(AppError):
    """A service this one depends on could not be reached or kept failing."""

    title = "Upstream unavailable"
    kind = "upstream-unavailable"


class Overloaded(AppError):
    """The process already runs as many turns as it is allowed to (`MAX_RUNNING_TURNS`):
    nothing was stored; the same request may be sent again after `retry_after` seconds."""

    title = "Overloaded"
    kind = "overloaded"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def problem_fields(self) -> dict[str, Any]:
        return {"retry_after": self.retry_after}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
