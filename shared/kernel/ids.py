"""Row ids: UUIDv7 (RFC 9562, section 5.7) — 48 bits of Unix time in milliseconds, then random.

Ids made one after another sort together, so a new row's entries in the indexes on its id (and
on the ids of the session, plan and agents it refers to, made moments before) land on the few
index pages holding the newest entries: a turn writes to pages already in memory and already
in the write-ahead log since the last checkpoint. Random (v4) ids put each entry on a page of
its own; at a million turns that is a page read, and after each checkpoint a full page image
in the log, per index entry. The database makes the ids it defaults the same way
(`parley_private.new_id()`). The 74 random bits come from the OS (`os.urandom`), as `uuid4`'s
do: two processes restored from one snapshot never share them.
"""

from __future__ import annotations

import os
import time
from uuid import UUID

_TIME_BITS = 48
_RANDOM_A_BITS = 12
_RANDOM_B_BITS = 62


def new_id() -> UUID:
    """A new row id (a UUIDv7: time-ordered to the millisecond, random within it)."""
    milliseconds = time.time_ns() // 1_000_000 & ((1 << _TIME_BITS) - 1)
    random = int.from_bytes(os.urandom(10), "big")
    random_a = random >> _RANDOM_B_BITS & ((1 << _RANDOM_A_BITS) - 1)
    random_b = random & ((1 << _RANDOM_B_BITS) - 1)
    value = milliseconds << 80 | 0x7 << 76 | random_a << 64 | 0b10 << 62 | random_b
    return UUID(int=value)
