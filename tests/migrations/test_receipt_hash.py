"""A write receipt's hash as bytes (revision 5a0c1e2b0709): a receipt stored with the hex text
is the key `CallKey.of` computes after the upgrade, and the same text again after a downgrade."""

from __future__ import annotations

import psycopg

from local.migrate import downgrade, upgrade
from shared.db.receipts import CallKey
from tests.migrations.test_leaner_turns import _rows, _turn, empty_database  # noqa: F401

BEFORE = "5a0c1e2b0708"
RECEIPT = "SELECT call_hash FROM parley_private.tool_call_receipts WHERE tool_call_id = 'c1'"


def test_a_receipts_hash_is_its_bytes_after_the_upgrade_and_its_hex_after_a_downgrade(
    empty_database: str,  # noqa: F811
) -> None:
    url = empty_database
    upgrade(url, BEFORE)
    with psycopg.connect(url) as conn:
        ids = _turn(conn)
    key = CallKey.of(ids["plan"], "c1", "create_task", '{"title":"x"}')
    with psycopg.connect(url) as conn:
        conn.execute(
            """INSERT INTO parley_private.tool_call_receipts (plan_id, tool_call_id, call_hash,
                   user_id, tool_name) VALUES (%s, 'c1', %s, %s, 'create_task')""",
            (ids["plan"], key.call_hash.hex(), ids["user"]),
        )

    upgrade(url)
    assert _rows(url, RECEIPT) == [{"call_hash": key.call_hash}]
    assert len(key.call_hash) == 32

    downgrade(url, BEFORE)
    assert _rows(url, RECEIPT) == [{"call_hash": key.call_hash.hex()}]
