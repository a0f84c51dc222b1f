"""The approval's call hash over an unambiguous input: a JSON array, not `concat_ws`.

`agent_approvals.call_hash` was SHA-256 of `concat_ws(E'\\n', kind, tool_name, tool_args,
reason)`. `concat_ws` skips NULLs and the reason is free text, so two different rows could hash
the same input: an escalation with no tool name and the reason `'escalate' || E'\\n' || r` reads
like one with the tool name `escalate` and the reason `r`. Parley never wrote such a pair (tool
calls have a registered name and `jsonb` arguments, whose text holds no raw newline; escalations
always name `escalate`), and the call id is part of the key too, but the hash should not lean on
what callers happen to pass. It is now SHA-256 of `jsonb_build_array(kind, tool_name, tool_args,
reason)::text`: each field in its place, NULL as `null`, arguments still in `jsonb`'s normal
form.

Every input of the hash is a column of the row, so existing rows are recomputed here (and back
on downgrade), without touching `updated_at`. A service running the other version of
`shared.db.approvals.CALL_HASH` than the database's rows (a deploy between the two) finds no
row for a call it already asked about and asks the user again: a second prompt, never a
decision applied to another call.

Revision ID: 2c8f4e7a0501
Revises: 6b2e9f4c0401
Create Date: 2026-11-26 13:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "2c8f4e7a0501"
down_revision: str | None = "6b2e9f4c0401"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The same expression as `shared.db.approvals.CALL_HASH`, over the row's own columns.
CALL_HASH = (
    "encode(sha256(convert_to(jsonb_build_array(kind, tool_name, tool_args, reason)::text, "
    "'UTF8')), 'hex')"
)
# Revision 9b1e6c4d0402's.
OLD_CALL_HASH = (
    "encode(sha256(convert_to(concat_ws(E'\\n', kind, tool_name, tool_args::text, reason), "
    "'UTF8')), 'hex')"
)

REHASH = """
ALTER TABLE public.agent_approvals DISABLE TRIGGER agent_approvals_updated_at;
UPDATE public.agent_approvals SET call_hash = {hash};
ALTER TABLE public.agent_approvals ENABLE TRIGGER agent_approvals_updated_at;
COMMENT ON COLUMN public.agent_approvals.call_hash IS {comment};
"""

COMMENT = (
    "'SHA-256 (hex) of jsonb_build_array(kind, tool name, jsonb arguments, reason): a decision "
    "applies to this exact call only.'"
)
OLD_COMMENT = (
    "'SHA-256 (hex) of kind, tool name and jsonb arguments (or reason): a decision applies to "
    "this exact call only.'"
)


def upgrade() -> None:
    op.execute(REHASH.format(hash=CALL_HASH, comment=COMMENT))


def downgrade() -> None:
    op.execute(REHASH.format(hash=OLD_CALL_HASH, comment=OLD_COMMENT))
