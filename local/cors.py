"""CORS on the local stack: the functions answer browsers as their deployed function URLs do.

On AWS the function URLs answer CORS themselves, configured in `infra/serverless.yml`
(`custom.browserCors`, origins from the stage's `consoleOrigin`); the local gateway applies the
same rules with Starlette's middleware, origins from `CORS_ALLOWED_ORIGINS`, so a frontend on
its own dev server (e.g. Vite's http://localhost:5173) works locally as it will deployed.
`tests/infra/test_serverless.py` holds the two configurations together.
"""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

ALLOWED_HEADERS = ("Authorization", "Content-Type", "Prefer")
"""What a browser may send: the token, JSON bodies, `Prefer: respond-async`."""
EXPOSED_HEADERS = (
    "Location",
    "Preference-Applied",
    "X-Parley-Session-Id",
    "X-Parley-Plan-Id",
    "X-Parley-Message-Id",
)
"""What a page may read: a 202's watch links, a stream's ids."""
MAX_AGE_SECONDS = 3600


def origins(setting: str) -> list[str]:
    """`CORS_ALLOWED_ORIGINS` as a list (`*`: any origin)."""
    return [origin.strip() for origin in setting.split(",") if origin.strip()]


def cors(setting: str) -> Middleware:
    """The middleware answering CORS for the origins `setting` names."""
    return Middleware(
        CORSMiddleware,
        allow_origins=origins(setting),
        allow_methods=["*"],
        allow_headers=list(ALLOWED_HEADERS),
        expose_headers=list(EXPOSED_HEADERS),
        max_age=MAX_AGE_SECONDS,
    )
