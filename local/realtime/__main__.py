"""`python -m local.realtime`: the local Supabase Realtime server, standalone.

Defaults come from `shared.kernel.settings` (DATABASE_URL, SUPABASE_JWT_SECRET, REALTIME_HOST,
REALTIME_PORT, …); flags override them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

import psycopg
import uvicorn

from local.realtime.app import create_app
from local.realtime.changes import capture
from local.realtime.config import RealtimeConfig
from local.realtime.engine import check_database
from local.realtime.logs import redact_uvicorn_logs
from shared.kernel.errors import ConfigurationError
from shared.services import get_settings


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local.realtime",
        description="A local Supabase Realtime server (websocket + REST broadcast) for Parley.",
    )
    parser.add_argument("--database-url", help="Postgres to serve (default: DATABASE_URL)")
    parser.add_argument("--jwt-secret", help="HS256 JWT secret (default: SUPABASE_JWT_SECRET)")
    parser.add_argument("--host", help="interface to listen on (default: REALTIME_HOST)")
    parser.add_argument("--port", type=int, help="port (default: REALTIME_PORT, 4000)")
    parser.add_argument(
        "--uninstall",
        action="store_true",
        help="drop the server's triggers and schema parley_realtime (not `realtime`) and exit",
    )
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> RealtimeConfig:
    overrides = {
        name: value
        for name, value in (
            ("database_url", args.database_url),
            ("jwt_secret", args.jwt_secret),
            ("host", args.host),
            ("port", args.port),
        )
        if value is not None
    }
    return RealtimeConfig.from_settings(get_settings(), **overrides)


async def uninstall(config: RealtimeConfig) -> None:
    async with await psycopg.AsyncConnection.connect(config.database_url) as conn:
        await capture.uninstall(conn)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=get_settings().log_level, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        config = build_config(args)
        asyncio.run(check_database(config.database_url))
    except ConfigurationError as exc:
        print(f"local.realtime: {exc}", file=sys.stderr)
        return 2
    if args.uninstall:
        asyncio.run(uninstall(config))
        print("local.realtime: triggers and schema parley_realtime removed")
        return 0
    redact_uvicorn_logs()
    print(f"local.realtime: ws://{config.host}:{config.port}/realtime/v1/websocket", flush=True)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            host=config.host,
            port=config.port,
            ws="websockets-sansio",
            ws_max_size=config.max_frame_bytes,
            ws_ping_interval=None,
        )
    )
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
