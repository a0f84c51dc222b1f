"""A local Supabase Realtime server that the official clients use unchanged.

Websocket at `/realtime/v1/websocket` (serializers 1.0.0 and 2.0.0), REST broadcast at
`/realtime/v1/api/broadcast[/{topic}/events/{event}]`, postgres_changes captured by triggers the
server installs itself, RLS applied per subscriber, presence, Broadcast from Database
(`realtime.send()`) with replay on join, and the hosted server's limits. Embed it with
`RealtimeServer`, serve `create_app()` with uvicorn, or run `python -m local.realtime`.
"""

from local.realtime.app import create_app
from local.realtime.config import RealtimeConfig
from local.realtime.engine import Realtime
from local.realtime.server import RealtimeServer

__all__ = ["Realtime", "RealtimeConfig", "RealtimeServer", "create_app"]
