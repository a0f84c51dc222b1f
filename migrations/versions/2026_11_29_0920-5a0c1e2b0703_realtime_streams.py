"""Realtime's quota: the answers streaming now, and what the project sent lately.

Hosted Realtime averages the messages a project sends and delivers over the last minute and
shuts down every channel a message reaches while that is at or over the plan's quota. Parley
paces its token batches so that everything stays under a share of the quota
(`shared/events/pacing.py`, docs/events.md); what it paces by comes from here, read by
statements a turn runs anyway:

* `parley_private.realtime_streams` — a row per plan whose planner is streaming (or about to):
  registered by the statement that reserves numbers for a streamed call's tokens, renewed every
  few seconds while tokens flow, and marked ended by the statement that stores the call. A row
  not renewed by `expires_at` (its process died) no longer counts. Ended rows are kept a while
  (each stream sends one last batch as it ends, which the budget counts); each registration
  deletes those a minute past counting (skipping any another statement holds), so the table
  holds about a minute of streams. UNLOGGED: a crash empties it, and the streams it counted
  died with the crash anyway.
* `parley_private.realtime_load(plan, seconds, window, private, cap)` registers (or renews) a
  plan's stream for `seconds` and returns the load as jsonb: `streams` (live, this one
  included), `ended` (streams ended within the last `window` seconds) and `durable` (events
  sent from the database in that window: `realtime.messages` broadcasts on private channels,
  the newest `cap` at most, counted on Realtime's own replay index; null when `private` is not
  true — public channels' rows have no index to count them by), each with the age in seconds
  of the oldest it counted (`ended_age`, `durable_age`), so a burst reads as the rate it is.
  `plan` null: read only.

Both live in `parley_private` (no grant to any API role); the service calls them as the owner.

Revision ID: 5a0c1e2b0703
Revises: 5a0c1e2b0702
Create Date: 2026-11-29 09:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0703"
down_revision: str | None = "5a0c1e2b0702"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = """
CREATE UNLOGGED TABLE parley_private.realtime_streams (
    plan_id uuid PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    ended_at timestamptz
);
COMMENT ON TABLE parley_private.realtime_streams IS
    'Plans whose planner streams tokens now (Realtime pacing); ended ones kept a while.';
REVOKE ALL ON parley_private.realtime_streams FROM PUBLIC, anon, authenticated, service_role;

CREATE FUNCTION parley_private.realtime_load(
    p_plan uuid, p_seconds double precision, p_window double precision, p_private boolean,
    p_cap integer)
RETURNS jsonb LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    live integer;
    ended integer;
    ended_age double precision;
    durable integer;
    durable_age double precision;
BEGIN
    IF p_plan IS NOT NULL THEN
        INSERT INTO parley_private.realtime_streams (plan_id, expires_at)
        VALUES (p_plan, now() + make_interval(secs => p_seconds))
        ON CONFLICT (plan_id) DO UPDATE SET expires_at = EXCLUDED.expires_at, ended_at = NULL;
        -- Rows long past counting go; one another statement is deleting is left to it.
        DELETE FROM parley_private.realtime_streams WHERE plan_id IN (
            SELECT plan_id FROM parley_private.realtime_streams
            WHERE expires_at < now() - make_interval(secs => 6 * p_window)
            FOR UPDATE SKIP LOCKED);
    END IF;
    SELECT count(*) FILTER (WHERE ended_at IS NULL AND expires_at > now()),
           count(*) FILTER (WHERE ended_at > now() - make_interval(secs => p_window)),
           extract(epoch FROM now() - min(ended_at)
                   FILTER (WHERE ended_at > now() - make_interval(secs => p_window)))
      INTO live, ended, ended_age
      FROM parley_private.realtime_streams;
    IF p_private THEN
        -- Realtime's own rows, newest first by its replay index (inserted_at DESC, topic) WHERE
        -- extension = 'broadcast' AND private; inserted_at is UTC (hosted's default,
        -- timezone('utc', now())).
        SELECT count(*), extract(epoch FROM timezone('utc', now()) - min(inserted_at))
          INTO durable, durable_age
          FROM (SELECT inserted_at FROM realtime.messages
                WHERE inserted_at > timezone('utc', now()) - make_interval(secs => p_window)
                  AND extension = 'broadcast' AND private IS TRUE
                ORDER BY inserted_at DESC LIMIT p_cap) recent;
    END IF;
    RETURN jsonb_build_object('streams', live, 'ended', ended, 'ended_age', ended_age,
                              'durable', durable, 'durable_age', durable_age,
                              'window', p_window);
END
$$;
COMMENT ON FUNCTION parley_private.realtime_load(uuid, double precision, double precision,
                                                 boolean, integer) IS
    'Register a plan''s token stream; the streams, ended streams and durable events lately.';
REVOKE ALL ON FUNCTION parley_private.realtime_load(uuid, double precision, double precision,
                                                    boolean, integer)
    FROM PUBLIC, anon, authenticated, service_role;
"""

DOWNGRADE = """
DROP FUNCTION parley_private.realtime_load(uuid, double precision, double precision, boolean,
                                           integer);
DROP TABLE parley_private.realtime_streams;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
