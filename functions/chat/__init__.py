"""User-facing chat: sessions, messages, send a message (JSON or SSE)."""
