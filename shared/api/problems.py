"""Every error leaves as RFC 9457 `application/problem+json`.

`AppError`s are mapped to a status here, once, so routes stay free of try/except and the
layers below stay free of HTTP. Each kind of error has its own problem `type` URI
(`PROBLEM_TYPES`, listed in every OpenAPI document and in docs/problems.md), so a
client tells two 409s apart without reading their titles.
"""

import logging
from http import HTTPStatus
from typing import Any, NamedTuple
from uuid import UUID

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.routing import Match

from shared.db.records import PlanStatus
from shared.kernel.errors import (
    AppError,
    ConfigurationError,
    Conflict,
    InvalidInput,
    NotFound,
    Overloaded,
    PermissionDenied,
    Unauthenticated,
    UpstreamUnavailable,
)
from shared.llm.errors import LLMError, LLMRateLimited, LLMTimeout

log = logging.getLogger(__name__)


PROBLEM_JSON = "application/problem+json"


STATUS_OF: dict[type[AppError], int] = {
    NotFound: 404,
    Conflict: 409,
    InvalidInput: 422,
    Unauthenticated: 401,
    PermissionDenied: 403,
    ConfigurationError: 503,
    Overloaded: 503,
    UpstreamUnavailable: 502,
    LLMRateLimited: 503,
    LLMTimeout: 504,
    LLMError: 502,
}


PROBLEM_TYPE_BASE = "https://parley.invalid/problems/"


"""Where Parley's problem type URIs live: identifiers, not pages (`.invalid` never resolves,
RFC 6761; RFC 9457 lets a type URI be one that is not dereferenced). Each is documented in
docs/problems.md and in every OpenAPI document (`components/schemas/ProblemType`)."""


class ProblemType(NamedTuple):
    """One kind of problem a function may answer: its name (the URI's last segment), status,
    title, and when it happens."""

    name: str
    status: int
    title: str
    when: str

    @property
    def uri(self) -> str:
        return PROBLEM_TYPE_BASE + self.name


PROBLEM_TYPES: tuple[ProblemType, ...] = (
    ProblemType("malformed-body", 400, "Bad Request", "The body is not JSON at all."),
    ProblemType(
        "application-error",
        400,
        "Application error",
        "An application error no other kind names (not expected on any route).",
    ),
    ProblemType(
        "unauthenticated",
        401,
        "Unauthenticated",
        "No bearer token, or one that does not verify or has expired: sign in again.",
    ),
    ProblemType(
        "account-gone",
        401,
        "Unauthenticated",
        "A valid token of a user that was deleted: sign in again.",
    ),
    ProblemType(
        "permission-denied",
        403,
        "Permission denied",
        "A user's token on a service or operator route.",
    ),
    ProblemType(
        "not-found",
        404,
        "Not found",
        "The session, plan or approval does not exist, or is another user's.",
    ),
    ProblemType(
        "turn-running",
        409,
        "Turn still running",
        "A new message while a turn of the session runs or waits for a decision "
        "(`plan_id`, `plan_status`): wait, decide, or cancel it.",
    ),
    ProblemType(
        "approval-decided",
        409,
        "Approval already decided",
        "The approval was decided before: a decision is made once.",
    ),
    ProblemType(
        "plan-ended",
        409,
        "Plan ended",
        "A decision for a plan that ended or is being cancelled: nothing waits for it.",
    ),
    ProblemType(
        "message-not-in-session",
        409,
        "Message not in session",
        "A fork at a message of another session.",
    ),
    ProblemType(
        "conflict",
        409,
        "Conflict",
        "The request clashes with the current state (no other kind names it).",
    ),
    ProblemType(
        "invalid-request",
        422,
        "Invalid request",
        "The body, path or query does not match the route's schema (`errors`: each field).",
    ),
    ProblemType(
        "invalid-input",
        422,
        "Invalid input",
        "Well-formed but not acceptable (an empty or too long message, a decision the "
        "approval does not take, …): `detail` says what.",
    ),
    ProblemType(
        "client-message-id-reused",
        422,
        "client_message_id already used",
        "The `client_message_id` was sent before with another message "
        "(`client_message_id`, `message_id`, `plan_id`): resend that message "
        "unchanged, or use a new id.",
    ),
    ProblemType(
        "unexpected-error", 500, "Internal Server Error", "A fault of the function; it is logged."
    ),
    ProblemType(
        "upstream-unavailable",
        502,
        "Upstream unavailable",
        "A service this one needs (another function, a queue, the project's signing "
        "keys) could not be reached: try again.",
    ),
    ProblemType(
        "model-failed",
        502,
        "Model call failed",
        "The model could not be called, or answered unusably.",
    ),
    ProblemType(
        "not-configured",
        503,
        "Configuration error",
        "The function is not configured; its log names the setting.",
    ),
    ProblemType(
        "overloaded",
        503,
        "Overloaded",
        "The function runs as many turns as it may: nothing was stored; retry after "
        "`retry_after` seconds (`Retry-After`).",
    ),
    ProblemType(
        "model-rate-limited", 503, "Model rate limited", "The model provider kept answering 429."
    ),
    ProblemType("model-timeout", 504, "Model timed out", "The model did not answer in time."),
)


"""Every problem type the functions answer with, by status. An HTTP-level refusal the status
says all about (no such route: 404, method not allowed: 405) is `about:blank` (RFC 9457)."""


PROBLEM_TYPE_OF = {problem_type.name: problem_type for problem_type in PROBLEM_TYPES}


def problem_type_uri(name: str) -> str:
    """The `type` URI of a problem kind (`PROBLEM_TYPES`)."""
    return PROBLEM_TYPE_OF[name].uri


def _problem_type_schema() -> dict[str, Any]:
    """`components/schemas/ProblemType`: one `const` per kind, with its name, status and when."""
    return {
        "title": "ProblemType",
        "description": "The problem's kind (RFC 9457 `type`): one of Parley's, or `about:blank` "
        "for an HTTP-level refusal the status says all about (no such route, method not "
        "allowed). `x-status` is the HTTP status each is answered with.",
        "oneOf": [
            *(
                {"const": t.uri, "title": t.name, "description": t.when, "x-status": t.status}
                for t in PROBLEM_TYPES
            ),
            {
                "const": "about:blank",
                "title": "about:blank",
                "description": "The status says all (404: no such route, 405: no such method).",
            },
        ],
    }


def _kind_field(name: str) -> Any:
    """The `type` field of a problem model that has one kind."""
    return Field(
        default=problem_type_uri(name), json_schema_extra={"const": problem_type_uri(name)}
    )


class Problem(BaseModel):
    """An RFC 9457 problem: every error response of every function has this shape. `type`
    names the kind (`ProblemType`); `detail` is written to be shown."""

    # Only the OpenAPI document uses these models (`problem` writes the body itself): they are
    # built when it is, not at every cold start.
    model_config = ConfigDict(defer_build=True)

    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]] | None = Field(
        default=None, description="`invalid-request`: each field that does not match."
    )


class TurnStillRunningProblem(Problem):
    """409 `turn-running`: a message sent while a turn of the session runs; the turn it waits
    for."""

    type: str = _kind_field("turn-running")
    plan_id: UUID = Field(description="The running turn's plan: wait for it, decide, or cancel.")
    plan_status: PlanStatus = Field(
        description="`awaiting_approval`: it waits for the user's decision; else it is working."
    )


class ClientMessageIdReusedProblem(Problem):
    """422 `client-message-id-reused`: a `client_message_id` the session already has, sent
    with another message."""

    type: str = _kind_field("client-message-id-reused")
    client_message_id: str
    message_id: UUID = Field(description="The message stored with that id.")
    plan_id: UUID = Field(description="Its turn.")


class OverloadedProblem(Problem):
    """503 `overloaded`: the function runs as many turns as it may; nothing was stored."""

    type: str = _kind_field("overloaded")
    retry_after: int = Field(description="Seconds to wait before sending again (`Retry-After`).")


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` documenting problem+json errors for `statuses`.

    They refer to the `Problem` schema, which `create_base_app` adds to the document once: a
    `"model"` here would make FastAPI build a validator per status and route at import."""
    return {
        status: {
            "description": HTTPStatus(status).phrase,
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


def problem_response(status: int, description: str, *schemas: str) -> dict[int | str, Any]:
    """OpenAPI `responses` for one status whose problems may have members of their own: one of
    `schemas` (component names), or the plain `Problem` (`anyOf`: each is also a `Problem`)."""
    refs = [{"$ref": f"#/components/schemas/{name}"} for name in (*schemas, "Problem")]
    return {
        status: {"description": description, "content": {PROBLEM_JSON: {"schema": {"anyOf": refs}}}}
    }


def status_of(error: AppError) -> int:
    """The HTTP status for an application error (the most specific class wins)."""
    for cls in type(error).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 400


def problem(
    status: int,
    detail: str,
    *,
    kind: str | None = None,
    title: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """A problem+json response of the `kind` named (`PROBLEM_TYPES`; None: `about:blank`)."""
    body = {
        "type": problem_type_uri(kind) if kind else "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **extra,
    }
    headers = {**(headers or {}), **({"WWW-Authenticate": "Bearer"} if status == 401 else {})}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


NOT_CONFIGURED = "This function is not configured; an operator finds the cause in its log."


def error_problem(error: AppError) -> JSONResponse:
    """The problem+json response for an application error. A configuration error names the
    settings to fix: those go to the log, never to the caller."""
    detail = str(error)
    if isinstance(error, ConfigurationError):
        log.error("%s: %s", type(error).__name__, detail)
        detail = NOT_CONFIGURED
    return problem(
        status_of(error),
        detail,
        kind=kind_of(error),
        title=error.title,
        headers=error.headers(),
        **error.problem_fields(),
    )


def kind_of(error: AppError) -> str:
    """The problem kind of an application error: its class's `kind`, when its status is that
    kind's (a class that takes another's status, like an `LLMError` that is also a
    configuration error, keeps the status's kind)."""
    status = status_of(error)
    for cls in type(error).__mro__:
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str) and PROBLEM_TYPE_OF[kind].status == status:
            return kind
    return "application-error"


async def _app_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    return error_problem(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors()
    ]
    summary = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
    return problem(
        422,
        summary or "Invalid request",
        kind="invalid-request",
        title="Invalid request",
        errors=errors,
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # RFC 9110: `Allow` lists every method the resource has
        headers["Allow"] = ", ".join(_allowed(request))
    kind = "malformed-body" if exc.status_code == 400 else None  # else the status says all
    return problem(exc.status_code, str(exc.detail), kind=kind, headers=headers)


def _allowed(request: Request) -> list[str]:
    """The methods of every route of the app at the request's path (FastAPI makes one route
    per method, and Starlette's 405 names only the first one's)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(
        500, "An unexpected error occurred; it has been logged.", kind="unexpected-error"
    )


def handle_problems(app: FastAPI) -> None:
    """Answer every error `app` meets with problem+json: Parley's own (`AppError`), a body
    that fails validation, Starlette's (no such route, wrong method), and the unexpected."""
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


def problem_schemas() -> dict[str, Any]:
    """The OpenAPI schemas routes refer to by name (`problems()`): `Problem`, whose `type` is
    one of the kinds (`ProblemType`), and the problems with members of their own."""
    schemas: dict[str, Any] = {"ProblemType": _problem_type_schema()}
    for model in (
        Problem,
        TurnStillRunningProblem,
        ClientMessageIdReusedProblem,
        OverloadedProblem,
    ):
        schemas[model.__name__] = model.model_json_schema()
    # Every problem's `type` is one of the kinds (`ProblemType`), a subclass's one of them.
    schemas["Problem"]["properties"]["type"] = {"$ref": "#/components/schemas/ProblemType"}
    return schemas
