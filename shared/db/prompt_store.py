"""System prompts, stored once each (`parley_private.agent_prompts`), named by `agents.prompt_id`.

A prompt's id is its hash, so the statement that makes an agent can add the prompt it was given
if it is new (`STORE_PROMPT`, a CTE: no statement of its own) and name it in the same breath;
every later agent given the same text names the same row.
"""

from __future__ import annotations

from functools import cache
from hashlib import sha256
from uuid import UUID

STORE_PROMPT = """stored_prompt AS (
    INSERT INTO parley_private.agent_prompts (id, body)
    SELECT %(prompt_id)s, %(prompt)s WHERE %(prompt)s::text IS NOT NULL
    ON CONFLICT (id) DO NOTHING)"""
"""A CTE adding the prompt `%(prompt)s` (id `%(prompt_id)s`) unless it is stored already (or
None); the agent row's foreign key is checked at the statement's end, when it is there."""


@cache
def prompt_id(body: str) -> UUID:
    """A prompt's id: the first 16 bytes of its UTF-8 text's SHA-256 (the table's CHECK and the
    migration that moved prompts there compute the same)."""
    return UUID(bytes=sha256(body.encode()).digest()[:16])


def prompt_params(body: str | None) -> dict[str, object]:
    """The parameters `STORE_PROMPT` takes (and an agent row's `prompt_id`)."""
    return {"prompt": body, "prompt_id": prompt_id(body) if body is not None else None}
