"""What a turn or a step that failed had already changed, so the user is never left to guess.

Its write calls that were done are read from their receipts (`db.receipts`: a write's receipt
commits with the write itself) and named in the failure's text: "Before it stopped, this turn
made these changes, which stay: create_task ("Buy seeds")."
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from shared.db import receipts
from shared.db.database import Connection


async def changes_note(
    conn: Connection, *, plan_id: UUID, who: str, call_ids: Collection[str] | None = None
) -> str:
    """The sentence to add to a failure of `who` ("this turn", "this step"); empty when its
    writes (those of `call_ids`, or the whole plan's) changed nothing."""
    done = await receipts.list_completed(conn, plan_id=plan_id)
    if call_ids is not None:
        done = [receipt for receipt in done if receipt.tool_call_id in call_ids]
    if not done:
        return ""
    listed = "; ".join(_change(receipt) for receipt in done)
    return f" Before it stopped, {who} made these changes, which stay: {listed}."


def _change(receipt: receipts.Receipt) -> str:
    """A write call as the user reads it: the tool, and the title or name of what it made."""
    found = receipt.result or {}
    for value in (found, *(v for v in found.values() if isinstance(v, dict))):
        label = next((value[k] for k in ("title", "name") if isinstance(value.get(k), str)), None)
        if label:
            return f'{receipt.tool_name} ("{label[:80]}")'
    return receipt.tool_name
