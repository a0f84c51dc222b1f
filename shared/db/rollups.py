"""Repository: the dashboards' daily rollups (`parley_private.execution_rollup`, `plan_rollup`).

Triggers keep them as executions, plans and steps are written (migration 5a0c1e2b0701), each
backend adding to rows of its own so concurrent turns never wait on a shared counter; folding
merges those rows into one per day, model and bucket, so a dashboard reads a handful a day.
"""

from __future__ import annotations

from shared.db.database import Connection


async def fold_rollups(conn: Connection, *, limit: int = 5000) -> int:
    """Fold up to `limit` rows of each rollup written by backends into the day's own rows,
    skipping rows a running transaction holds (its turn is not kept waiting); returns the rows
    written. Only one fold runs at a time: another returns 0 at once."""
    cur = await conn.execute("SELECT parley_private.fold_rollups(%s) AS folded", (limit,))
    row = await cur.fetchone()
    return int(row["folded"]) if row else 0
