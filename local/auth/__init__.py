"""A local Supabase Auth (GoTrue) that supabase-js signs users in with, as on a hosted project.

Email and password sign-up (confirmed at once), the password and refresh-token grants (rotation
and reuse detection), `GET /user`, `POST /logout` and the admin user routes, answering with
GoTrue's shapes, statuses and error codes; users in `auth.users` as Supabase stores them;
sessions signed with an ES256 key published at `/.well-known/jwks.json` (HS256 by setting); the
project's API keys in both formats behind the gateway's key check. Served by the local stack at
`/auth/v1` of the project URL (`local.stack`); `docs/auth-twin.md` lists every copied behaviour
with its source.
"""

from local.auth.app import create_app
from local.auth.config import AuthConfig
from local.auth.keys import ApiKeys, SigningKey, mint_token
from local.auth.service import Auth

__all__ = ["ApiKeys", "Auth", "AuthConfig", "SigningKey", "create_app", "mint_token"]
