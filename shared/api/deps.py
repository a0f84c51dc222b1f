"""What a route depends on: the services, the caller (a signed-in user, or the service), and
the function's own URL.
"""

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from shared.auth.access_tokens import Identity, User
from shared.db import users
from shared.kernel.errors import (
    AccountGone,
    PermissionDenied,
    Unauthenticated,
)
from shared.services import Services, services_of


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
