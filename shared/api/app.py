"""FastAPI glue shared by the three functions: the app factory, problem+json errors and
202 Accepted answers.

Every error leaves as RFC 9457 `application/problem+json`. `AppError`s are mapped to a status
here, once, so routes stay free of try/except and `shared/` stays free of HTTP. Each kind of
error has its own problem `type` URI (`PROBLEM_TYPES`, listed in every OpenAPI document and
in docs/problems.md), so a client tells two 409s apart without reading their titles.
"""

import hmac
import logging
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Annotated, Any, NamedTuple
from uuid import UUID

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.routing import Match

from shared.auth.access_tokens import Identity, User
from shared.db import users
from shared.db.records import PlanStatus
from shared.kernel.admission import TurnSlots
from shared.kernel.errors import (
    AccountGone,
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
from shared.observability.tracing.http_server import TraceRequests
from shared.services import Services, services_of

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


SERVER_SENT_EVENT: dict[str, Any] = {
    "type": "object",
    "title": "ServerSentEvent",
    "description": "One message of a `text/event-stream` response (each response is a "
    "sequence of them, as OpenAPI 3.2's `itemSchema` would say): `id` is the event's `seq` "
    "(so `Last-Event-ID` means after this seq), `event` its type, `data` the event as JSON.",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": "#/components/schemas/Event"},
        },
    },
    "required": ["id", "event", "data"],
}
EVENT_STREAM: dict[str, Any] = {
    "text/event-stream": {"schema": {"$ref": "#/components/schemas/ServerSentEvent"}}
}
"""The content of a response that streams events (`components/schemas/ServerSentEvent`)."""


def accepted_response(model: type[BaseModel], description: str, *, location: str) -> dict[str, Any]:
    """OpenAPI of a route's 202 Accepted (`accepted`): its body `model`, and the headers,
    `location` saying what `Location` names."""
    return {
        "model": model,
        "description": description,
        "headers": {
            "Location": {"description": location, "required": True,
                         "schema": {"type": "string", "format": "uri-reference"}},
            "Preference-Applied": {
                "description": "`respond-async` when `Prefer: respond-async` was honoured.",
                "schema": {"type": "string", "enum": ["respond-async"]},
            },
        },
    }  # fmt: skip


def accepted(body: BaseModel, location: str, *, preference_applied: bool) -> JSONResponse:
    """202 Accepted: `body`, where to watch (`Location`), and `Preference-Applied:
    respond-async` when the answer is 202 because `Prefer: respond-async` asked for it."""
    headers = {"Location": location}
    if preference_applied:
        headers["Preference-Applied"] = "respond-async"
    return JSONResponse(body.model_dump(mode="json"), status_code=202, headers=headers)


def respond_async(prefer: str | None) -> bool:
    """Whether a `Prefer` header (RFC 7240) asks for `respond-async`."""
    tokens = (part.split("=")[0].strip().lower() for part in (prefer or "").replace(";", ",")
              .split(","))  # fmt: skip
    return "respond-async" in tokens


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
    return problem(status_of(error), detail, kind=kind_of(error), title=error.title,
                   headers=error.headers(), **error.problem_fields())  # fmt: skip


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


def function_url(request: Request) -> str:
    """This function's URL as the caller reached it — behind a gateway's prefix too (the local
    stack mounts each function at its own; `base_url` would give the gateway's root)."""
    url = request.url
    return f"{url.scheme}://{url.netloc}{request.scope.get('root_path', '')}".rstrip("/")


_bearer = HTTPBearer(
    auto_error=False,
    description="A Supabase access token (user routes) or the service-role key (internal routes).",
)


async def _services(request: Request) -> Services:
    # Async, so FastAPI calls it on the event loop: a plain `def` dependency runs in its thread
    # pool, a thread hop on every request and anyio's thread machinery loaded on the first.
    return services_of(request.app)


ServicesDep = Annotated[Services, Depends(_services)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def current_user(services: ServicesDep, credentials: Credentials) -> User:
    """The signed-in user behind the request's Supabase access token — still a user: Supabase
    does not revoke the tokens of a user it deletes, and such a token answers 401 on every
    route (its rows are gone with the user, so each route would otherwise answer differently:
    an empty list, a 404, a 401 where it creates a session)."""
    if credentials is None:
        raise Unauthenticated("Missing bearer token: send 'Authorization: Bearer <access token>'")
    user = services.verifier.user(credentials.credentials)
    async with services.db.autocommit() as conn:
        if not await users.user_exists(conn, user_id=user.id):
            raise AccountGone
    return user


async def service_caller(services: ServicesDep, credentials: Credentials) -> Identity:
    """A caller holding the service-role key (function-to-function calls).

    The key is accepted as configured (new `sb_secret_…` keys are not JWTs) or as any JWT
    signed for the project with role `service_role`.
    """
    if credentials is None:
        raise Unauthenticated("Missing bearer token: internal routes need the service-role key")
    key = services.settings.supabase_service_role_key
    if key and hmac.compare_digest(credentials.credentials, key.get_secret_value()):
        return Identity(role="service_role", user_id=None, claims={"role": "service_role"})
    identity = services.verifier.identity(credentials.credentials)
    if not identity.is_service:
        raise PermissionDenied("This route is internal: it needs the service-role key")
    return identity


CurrentUser = Annotated[User, Depends(current_user)]
ServiceCaller = Annotated[Identity, Depends(service_caller)]


def create_base_app(*, title: str, description: str, routers: Sequence[APIRouter] = ()) -> FastAPI:
    """A FastAPI app with Parley's error handling, a health route and the given routers."""
    app = FastAPI(title=title, description=description, version="0.1.0")
    app.add_middleware(TraceRequests)  # a span per request when tracing is on; else a pass
    app.add_exception_handler(AppError, _app_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)

    @app.get("/health", tags=["meta"], summary="Liveness probe")
    async def health() -> dict[str, str]:
        return {"status": "ok", "function": title}

    for router in routers:
        app.include_router(router, responses=problems(401, 422, 502, 503))
    _document_problems(app)
    return app


def _document_problems(app: FastAPI) -> None:
    """Complete the OpenAPI document with the schemas routes refer to by name: `Problem`
    (`problems()`), its kinds (`ProblemType`) and those with members of their own, and the
    events (`Event`, `ServerSentEvent`: `EVENT_STREAM`)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()  # FastAPI's, which it keeps in `app.openapi_schema`
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas["ProblemType"] = _problem_type_schema()
        for model in (
            Problem,
            TurnStillRunningProblem,
            ClientMessageIdReusedProblem,
            OverloadedProblem,
        ):
            schemas[model.__name__] = model.model_json_schema()
        # Every problem's `type` is one of the kinds (`ProblemType`), a subclass's one of them.
        schemas["Problem"]["properties"]["type"] = {"$ref": "#/components/schemas/ProblemType"}
        from shared.wire.event_schema import openapi_components  # the event models: only here

        for name, schema in openapi_components().items():
            schemas.setdefault(name, schema)
        schemas["ServerSentEvent"] = SERVER_SENT_EVENT
        _document_unreadable_bodies(document)
        return document

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way


def _document_unreadable_bodies(document: dict[str, Any]) -> None:
    """A route that takes a body answers 400 to one that is not JSON at all (FastAPI's own
    answer, before validation)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                operation["responses"].setdefault("400", problems(400)[400])


class TurnAdmission:
    """ASGI middleware refusing a send (`POST /chat`) at once while every turn slot is taken:
    a `503` with `Retry-After` before its body is read or its token checked, so refusing the
    overflow costs next to nothing. The send that does get through still takes its slot
    (`TurnSlots.take`), which decides; this only spares the full request's work."""

    def __init__(self, app: Any, *, slots: Callable[[], TurnSlots], path: str = "/chat") -> None:
        self.app = app
        self._slots = slots
        self._path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == self._path:
            slots = self._slots()
            if slots.full:
                await error_problem(slots.overloaded())(scope, receive, send)
                return
        await self.app(scope, receive, send)
