"""Supabase Auth's HTTP API as supabase-js calls it, behind the project gateway's key check.

Mounted at `/auth/v1` of the local project URL (`local.stack`). The gateway part is hosted's API
gateway as `supabase start` reproduces it (github.com/supabase/cli,
`internal/start/templates/kong.yml` and `internal/start/start.go`, `BearerToken`): every
request needs an `apikey` (header or query), an opaque key is swapped for the legacy JWT of its
role in `Authorization` unless the request carries its own bearer JWT. Routes and handlers are
GoTrue's (github.com/supabase/auth, `internal/api/api.go`); `local.auth.service` says which
handler each behaviour is copied from.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from local.auth.errors import AuthError, bad_request, error_response
from local.auth.service import Auth, Caller

MAX_BODY_BYTES = 1 << 20
"""`limitRequestBody(1 << 20)` in GoTrue's router."""
_NO_KEY = {
    "message": "No API key found in request",
    "hint": "No `apikey` request header or url param was found.",
}
_BAD_KEY = {
    "message": "Invalid API key",
    "hint": "Double check your Supabase `anon` or `service_role` API key.",
}


def create_app(auth: Auth) -> Starlette:
    """The Auth API, to mount at `/auth/v1`."""
    routes = [
        Route("/.well-known/jwks.json", _jwks, methods=["GET"]),
        Route("/health", _endpoint(_health), methods=["GET"]),
        Route("/settings", _endpoint(_settings), methods=["GET"]),
        Route("/signup", _endpoint(_signup), methods=["POST"]),
        Route("/token", _endpoint(_token), methods=["POST"]),
        Route("/user", _endpoint(_user), methods=["GET"]),
        Route("/logout", _endpoint(_logout), methods=["POST"]),
        Route("/admin/users", _endpoint(_admin_users), methods=["GET", "POST"]),
        Route("/admin/users/{user_id}", _endpoint(_admin_user), methods=["GET", "PUT", "DELETE"]),
    ]
    app = Starlette(routes=routes)
    app.state.auth = auth
    return app


Handler = Any


def _endpoint(handler: Handler) -> Handler:
    """The gateway's key check, then the handler; `AuthError`s answered in GoTrue's shape."""

    async def endpoint(request: Request) -> Response:
        auth: Auth = request.app.state.auth
        refused = _gateway(request, auth)
        if refused is not None:
            return refused
        try:
            return await handler(request, auth)  # type: ignore[no-any-return]
        except AuthError as error:
            return error_response(request, error)

    return endpoint


def _gateway(request: Request, auth: Auth) -> Response | None:
    """Refuse a request without a project API key; put the key's JWT where GoTrue reads it."""
    apikey = request.headers.get("apikey") or request.query_params.get("apikey")
    if not apikey:
        return JSONResponse(_NO_KEY, status_code=401)
    legacy = auth.keys.legacy_for(apikey)
    if legacy is None:
        if apikey.startswith("sb_"):
            return JSONResponse(_BAD_KEY, status_code=401)
        try:  # a legacy key: a JWT of the project's with a role
            claims = auth.verify_bearer(f"Bearer {apikey}")
        except AuthError:
            return JSONResponse(_BAD_KEY, status_code=401)
        if claims.get("role") not in ("anon", "service_role"):
            return JSONResponse(_BAD_KEY, status_code=401)
        legacy = apikey
    authorization = request.headers.get("authorization")
    if authorization is None or authorization.startswith("Bearer sb_"):
        request.state.authorization = f"Bearer {legacy}"
    else:
        request.state.authorization = authorization
    return None


def _caller(request: Request) -> Caller:
    forwarded = request.headers.get("x-forwarded-for", "").split(",")[0].strip()
    ip = forwarded or (request.client.host if request.client else None)
    return Caller(request.headers.get("user-agent"), ip)


async def _params(request: Request) -> dict[str, Any]:
    """`retrieveRequestParams`: the body as a JSON object, whatever its content type."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise AuthError(
            413, "request_entity_too_large", f"Request body too large (max {MAX_BODY_BYTES} bytes)"
        )
    try:
        params = json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request("bad_json", f"Could not parse request body as JSON: {exc}") from None
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise bad_request(
            "bad_json",
            "Could not parse request body as JSON: json: cannot unmarshal "
            f"{type(params).__name__} into Go value of type api.RequestParams",
        )
    return params


async def _jwks(request: Request) -> Response:
    # internal/api/jwks.go, WellKnownJwks: public, no key needed, cached ten minutes.
    auth: Auth = request.app.state.auth
    return JSONResponse(auth.signing.jwks(), headers={"Cache-Control": "public, max-age=600"})


async def _health(request: Request, auth: Auth) -> Response:
    return JSONResponse(
        {
            "version": "parley-auth-twin",
            "name": "GoTrue",
            "description": "GoTrue is a user registration and authentication API",
        }
    )


async def _settings(request: Request, auth: Auth) -> Response:
    # internal/api/settings.go: what a client may ask before showing a sign-in form.
    return JSONResponse(
        {
            "external": {"email": True, "phone": False, "anonymous_users": False},
            "disable_signup": not auth.config.signups,
            "mailer_autoconfirm": True,
            "phone_autoconfirm": False,
            "sms_provider": "",
            "saml_enabled": False,
        }
    )


async def _signup(request: Request, auth: Auth) -> Response:
    return JSONResponse(await auth.signup(await _params(request), _caller(request)))


async def _token(request: Request, auth: Auth) -> Response:
    grant_type = request.query_params.get("grant_type", "")
    params = await _params(request)
    return JSONResponse(await auth.token(grant_type, params, _caller(request)))


async def _user(request: Request, auth: Auth) -> Response:
    return JSONResponse(await auth.user(request.state.authorization))


async def _logout(request: Request, auth: Auth) -> Response:
    await auth.logout(request.state.authorization, request.query_params.get("scope"))
    return Response(status_code=204)


async def _admin_users(request: Request, auth: Auth) -> Response:
    auth.require_admin(request.state.authorization)
    if request.method == "POST":
        return JSONResponse(await auth.admin_create(await _params(request)))
    query = request.query_params
    body, total = await auth.admin_list(query.get("page"), query.get("per_page"))
    return JSONResponse(body, headers={"X-Total-Count": str(total)})


async def _admin_user(request: Request, auth: Auth) -> Response:
    auth.require_admin(request.state.authorization)
    user_id = request.path_params["user_id"]
    if request.method == "PUT":
        return JSONResponse(await auth.admin_update(user_id, await _params(request)))
    if request.method == "DELETE":
        await auth.admin_delete(user_id)
        return JSONResponse({})
    return JSONResponse(await auth.admin_get(user_id))
