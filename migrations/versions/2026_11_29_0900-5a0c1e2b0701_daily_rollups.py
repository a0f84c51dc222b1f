"""Daily rollups: the dashboards read counters kept as executions and plans are accounted.

`execution_stats_daily` and `plan_outcomes_daily` aggregated every row of `agent_executions`
and `agent_plans` on each read: linear in all history (2.9 s at a million turns). They keep
their names and columns, and now read two rollup tables in `parley_private`:

* `execution_rollup` — per UTC day × model × agent role × duration bucket × shard: the
  executions and their outcomes, model calls, tokens, cost, tool calls, denials;
* `plan_rollup` — per UTC day × strategy × duration bucket × shard: the plans and their
  outcomes, their steps, tokens and cost; `plan_rollup_steps` remembers, per plan with
  steps, where its steps are counted (so a plan whose day or strategy changes takes them along).

**When a row is rolled up.** Synchronously, in the statement that writes it: triggers on
`agent_executions`, `agent_plans` and `agent_plan_steps` add each row version's change (the new
version's contribution less the old one's: a counter that grew, a status that moved, a
duration that appeared) to the rollups, in the same transaction — so the accounting statements
keep their count (a direct turn is still its few statements), the rollups commit exactly when
the rows do, and every writer is counted (the hot path, the sweeper, cancellations,
repositories, an operator's `UPDATE`). Deleting detail rows (retention, a deleted session or
user) leaves the rollups as they are: they keep the dashboards' history. So retention may
delete any detail row once it is committed: it is counted already.

**Shards.** Each backend adds to rows of its own (`shard` = `pg_backend_pid()`), so concurrent
turns never wait for one another on a shared counter row (one row per day and model would
serialize every turn's commit, and two statements adding to two such rows in opposite order
would deadlock). `parley_private.fold_rollups()`, run by the sweeper, folds the shards' rows
into shard 0 (skipping rows a running transaction holds) and stores each folded group's
dashboard row (`execution_stats_settled`, `plan_outcomes_settled`): the views read a group
with nothing left in other shards as its stored row, and aggregate at read time only the
groups a backend added to since the last fold (today's, mostly).

**Percentiles.** p50/p95 durations do not add up across rows, so the rollups keep a histogram:
a duration's bucket keeps its 5 most significant bits (durations below 32 are their own
bucket: exact), and the views read a percentile from it as `percentile_cont` does (the two
ranks around it, interpolated), each rank's value being its bucket's midpoint — within 1/32
(3.125 %) of the exact value, exact below 32 ms. Execution durations are in ms
(`duration_ms`), plan durations in µs. Counts, outcomes, tokens, cost, success rates and
average steps are exact.

The migration creates the triggers and fills the rollups from the existing rows under a lock
that holds writers of the three tables off until it commits (2.5 s at 100,000 turns, 25–45 s
at a million on the benchmark's machine).

**Time-ordered ids.** The same revision makes the conversation tables' ids UUIDv7
(`parley_private.new_id()`, as `shared.kernel.ids.new_id` makes them in Python): random ids put every
new index entry on a page of its own, which at a million turns is a page read and, after each
checkpoint, a full page image in the write-ahead log per entry — after a checkpoint, a direct
turn wrote about 12 times the log it writes on an empty database (128 KB against 10.5 KB). Time-ordered ids keep a turn's entries on the newest
pages. Existing ids stay as they are. `authenticated` may execute the function: it makes the id
of a session a user creates through the Data API.

Revision ID: 5a0c1e2b0701
Revises: 4d1e8a7c0601
Create Date: 2026-11-29 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "5a0c1e2b0701"
down_revision: str | None = "4d1e8a7c0601"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EXECUTION_ROLLUP = "parley_private.execution_rollup"
PLAN_ROLLUP = "parley_private.plan_rollup"
PLAN_STEPS = "parley_private.plan_rollup_steps"
EXECUTION_SETTLED = "parley_private.execution_stats_settled"
PLAN_SETTLED = "parley_private.plan_outcomes_settled"

EXECUTION_COUNTERS = (
    "executions",
    "completed",
    "failed",
    "timed_out",
    "cancelled",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "cache_hit_tokens",
    "cost_usd",
    "tool_calls",
    "permission_denials",
)
PLAN_COUNTERS = (
    "plans",
    "completed",
    "failed",
    "cancelled",
    "awaiting_approval",
    "in_progress",
    "steps",
    "prompt_tokens",
    "completion_tokens",
    "cache_hit_tokens",
    "cost_usd",
)
EXECUTION_KEY = "day, model, agent_role, duration_bucket, shard"
PLAN_KEY = "day, strategy, duration_bucket, shard"


def _counters(names: Sequence[str]) -> str:
    return ",\n    ".join(
        f"{n} numeric NOT NULL DEFAULT 0" if n == "cost_usd" else f"{n} bigint NOT NULL DEFAULT 0"
        for n in names
    )


def _sums(names: Sequence[str], prefix: str = "") -> str:
    return ", ".join(f"sum({prefix}{n}) AS {n}" for n in names)


def _added(names: Sequence[str]) -> str:
    return ", ".join(f"{n} = r.{n} + excluded.{n}" for n in names)


def _bucket(value: str) -> str:
    """A duration's histogram bucket, as SQL: its 5 most significant bits (below 32: itself);
    -1 for none. (Written out where the triggers use it: a function call costs them more.)"""
    shift = f"(length(ltrim(({value})::bigint::bit(64)::text, '0')) - 5)"
    return (
        f"CASE WHEN ({value}) IS NULL THEN -1 WHEN ({value}) < 32 THEN greatest(({value}), 0) "
        f"ELSE (({value})::bigint >> {shift}) << {shift} END"
    )


def _execution_key(row: str) -> list[str]:
    return [
        f"(coalesce({row}.started_at, {row}.created_at) AT TIME ZONE 'UTC')::date",
        f"{row}.model",
        f"{row}.agent_role",
        _bucket(f"{row}.duration_ms"),
    ]


def _execution_counters(row: str) -> list[str]:
    return [
        "1",
        f"({row}.status = 'completed')::int",
        f"({row}.status = 'failed')::int",
        f"({row}.status = 'timeout')::int",
        f"({row}.status = 'cancelled')::int",
        f"{row}.llm_calls",
        f"{row}.prompt_tokens",
        f"{row}.completion_tokens",
        f"{row}.cache_hit_tokens",
        f"{row}.cost_usd",
        f"{row}.tool_call_count",
        f"{row}.permission_denials",
    ]


def _execution(row: str, sign: str) -> str:
    """A row version's contribution to `execution_rollup`, signed (VALUES columns)."""
    return f"({', '.join([sign, *_execution_key(row), *_execution_counters(row)])})"


PLAN_DAY = "({row}.created_at AT TIME ZONE 'UTC')::date"
PLAN_STRATEGY = "coalesce({row}.strategy, 'undecided')"
PLAN_MICROSECONDS = (
    "(extract(epoch FROM {row}.completed_at - coalesce({row}.started_at, {row}.created_at))"
    " * 1000000)::bigint"
)


def _plan_key(row: str) -> list[str]:
    return [
        PLAN_DAY.format(row=row),
        PLAN_STRATEGY.format(row=row),
        _bucket(PLAN_MICROSECONDS.format(row=row)),
    ]


def _plan_counters(row: str) -> list[str]:
    """A plan row version's counters (its steps are counted apart: 0 here)."""
    return [
        "1",
        f"({row}.status = 'completed')::int",
        f"({row}.status = 'failed')::int",
        f"({row}.status = 'cancelled')::int",
        f"({row}.status = 'awaiting_approval')::int",
        f"({row}.status IN ('pending', 'executing'))::int",
        "0::bigint",
        f"{row}.prompt_tokens",
        f"{row}.completion_tokens",
        f"{row}.cache_hit_tokens",
        f"{row}.cost_usd",
    ]


def _plan(row: str, sign: str) -> str:
    """A plan row version's contribution to `plan_rollup`, signed (VALUES columns)."""
    return f"({', '.join([sign, *_plan_key(row), *_plan_counters(row)])})"


def _same_key_delta(
    rollup: str, key: str, keys: list[str], new: list[str], old: list[str], counters: Sequence[str]
) -> str:
    """The trigger's common case: the row stays in its rollup row; one upsert of the change."""
    deltas = [f"({n}) - ({o})" for n, o in zip(new, old, strict=True)]
    return f"""INSERT INTO {rollup} AS r ({key}, {", ".join(counters)})
        VALUES ({", ".join(keys)}, pg_backend_pid(), {", ".join(deltas)})
        ON CONFLICT ({key}) DO UPDATE SET {_added(counters)};"""


EXECUTION_WATCHED = (
    "status",
    "model",
    "agent_role",
    "started_at",
    "created_at",
    "duration_ms",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "cache_hit_tokens",
    "cost_usd",
    "tool_call_count",
    "permission_denials",
)
PLAN_WATCHED = (
    "status",
    "strategy",
    "created_at",
    "started_at",
    "completed_at",
    "prompt_tokens",
    "completion_tokens",
    "cache_hit_tokens",
    "cost_usd",
)


def _changed(columns: Sequence[str]) -> str:
    old = ", ".join(f"OLD.{c}" for c in columns)
    new = ", ".join(f"NEW.{c}" for c in columns)
    return f"(({old}) IS DISTINCT FROM ({new}))"


ID_TABLES = (
    "chat_sessions",
    "chat_messages",
    "agents",
    "agent_plans",
    "agent_plan_steps",
    "agent_chat_sessions",
    "agent_chat_messages",
    "agent_executions",
    "agent_approvals",
)

NEW_ID = """
CREATE FUNCTION parley_private.new_id() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE SET search_path = '' AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;
COMMENT ON FUNCTION parley_private.new_id() IS
    'A UUIDv7 (RFC 9562): 48 bits of Unix time in ms, version 7, then random (a v4''s bits).';
REVOKE ALL ON FUNCTION parley_private.new_id() FROM PUBLIC, anon, authenticated, service_role;
GRANT EXECUTE ON FUNCTION parley_private.new_id() TO authenticated, service_role;
""" + "\n".join(
    f"ALTER TABLE public.{t} ALTER COLUMN id SET DEFAULT parley_private.new_id();"
    for t in ID_TABLES
)

UPGRADE = f"""
LOCK TABLE public.agent_executions, public.agent_plans, public.agent_plan_steps
    IN SHARE ROW EXCLUSIVE MODE;

CREATE FUNCTION parley_private.duration_bucket(v bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = '' AS $$
    SELECT {_bucket("v")}
$$;
COMMENT ON FUNCTION parley_private.duration_bucket(bigint) IS
    'A duration''s histogram bucket: its 5 most significant bits (below 32: itself); -1 for none.';

CREATE FUNCTION parley_private.duration_bucket_value(bucket bigint) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = '' AS $$
    SELECT CASE WHEN bucket < 32 THEN bucket::numeric
                ELSE bucket + ((1::bigint << (length(ltrim(bucket::bit(64)::text, '0')) - 5))
                               - 1) / 2.0 END
$$;
COMMENT ON FUNCTION parley_private.duration_bucket_value(bigint) IS
    'The value a bucket stands for: its midpoint, within 1/32 of any duration in it.';

CREATE TABLE {EXECUTION_ROLLUP} (
    day date NOT NULL,
    model text NOT NULL,
    agent_role text NOT NULL,
    duration_bucket bigint NOT NULL,
    shard integer NOT NULL,
    {_counters(EXECUTION_COUNTERS)},
    PRIMARY KEY ({EXECUTION_KEY})
);
COMMENT ON TABLE {EXECUTION_ROLLUP} IS
    'agent_executions per UTC day (of started_at, else created_at) x model x role x duration '
    'bucket (ms; -1: not finished) x shard (the writing backend; 0: folded). Read through '
    'public.execution_stats_daily.';

CREATE TABLE {PLAN_ROLLUP} (
    day date NOT NULL,
    strategy text NOT NULL,
    duration_bucket bigint NOT NULL,
    shard integer NOT NULL,
    {_counters(PLAN_COUNTERS)},
    PRIMARY KEY ({PLAN_KEY})
);
COMMENT ON TABLE {PLAN_ROLLUP} IS
    'agent_plans per UTC day (of created_at) x strategy (''undecided'' for none) x duration '
    'bucket (us; -1: not ended) x shard. Read through public.plan_outcomes_daily.';

CREATE TABLE {PLAN_STEPS} (
    plan_id uuid PRIMARY KEY REFERENCES public.agent_plans (id) ON DELETE CASCADE,
    day date NOT NULL,
    strategy text NOT NULL,
    steps bigint NOT NULL
);
COMMENT ON TABLE {PLAN_STEPS} IS
    'Per plan with steps: how many are counted in plan_rollup, and under which day and strategy.';

ALTER TABLE {EXECUTION_ROLLUP} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {PLAN_ROLLUP} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {PLAN_STEPS} ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {EXECUTION_ROLLUP}, {PLAN_ROLLUP}, {PLAN_STEPS}
    FROM PUBLIC, anon, authenticated, service_role;
-- The views run as their caller (security_invoker): service_role reads the rollups through them.
GRANT USAGE ON SCHEMA parley_private TO service_role;
GRANT SELECT ON {EXECUTION_ROLLUP}, {PLAN_ROLLUP} TO service_role;

CREATE FUNCTION parley_private.roll_up_execution() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND ({", ".join(_execution_key("OLD"))}) = ({", ".join(_execution_key("NEW"))}) THEN
        {_same_key_delta(EXECUTION_ROLLUP, EXECUTION_KEY, _execution_key("NEW"), _execution_counters("NEW"), _execution_counters("OLD"), EXECUTION_COUNTERS)}
        RETURN NULL;
    END IF;
    INSERT INTO {EXECUTION_ROLLUP} AS r ({EXECUTION_KEY}, {", ".join(EXECUTION_COUNTERS)})
    SELECT day, model, agent_role, duration_bucket, pg_backend_pid(),
           {", ".join(f"sum(sign * {n})" for n in EXECUTION_COUNTERS)}
      FROM (VALUES {_execution("OLD", "-1")},
                   {_execution("NEW", "1")})
           AS e(sign, day, model, agent_role, duration_bucket, {", ".join(EXECUTION_COUNTERS)})
     WHERE e.day IS NOT NULL  -- an INSERT has no old version
     GROUP BY day, model, agent_role, duration_bucket
    ON CONFLICT ({EXECUTION_KEY}) DO UPDATE SET {_added(EXECUTION_COUNTERS)};
    RETURN NULL;
END
$$;

CREATE FUNCTION parley_private.roll_up_plan() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    counted {PLAN_STEPS}%ROWTYPE;
    new_day date := {PLAN_DAY.format(row="NEW")};
    new_strategy text := {PLAN_STRATEGY.format(row="NEW")};
BEGIN
    IF TG_OP = 'UPDATE'
       AND ({", ".join(_plan_key("OLD"))}) = ({", ".join(_plan_key("NEW"))}) THEN
        {_same_key_delta(PLAN_ROLLUP, PLAN_KEY, _plan_key("NEW"), _plan_counters("NEW"), _plan_counters("OLD"), PLAN_COUNTERS)}
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.created_at, OLD.strategy) IS DISTINCT FROM
                            (NEW.created_at, NEW.strategy) THEN  -- steps go with their plan
        SELECT * INTO counted FROM {PLAN_STEPS} WHERE plan_id = NEW.id FOR UPDATE;
        IF FOUND AND (counted.day, counted.strategy) IS DISTINCT FROM (new_day, new_strategy)
        THEN
            UPDATE {PLAN_STEPS} SET day = new_day, strategy = new_strategy
             WHERE plan_id = NEW.id;
        ELSE
            counted := NULL;
        END IF;
    END IF;
    INSERT INTO {PLAN_ROLLUP} AS r ({PLAN_KEY}, {", ".join(PLAN_COUNTERS)})
    SELECT day, strategy, duration_bucket, pg_backend_pid(),
           {", ".join(f"sum(sign * {n})" for n in PLAN_COUNTERS)}
      FROM (VALUES {_plan("OLD", "-1")},
                   {_plan("NEW", "1")},
                   (-1, counted.day, counted.strategy, -1::bigint, 0, 0, 0, 0, 0, 0,
                    counted.steps, 0::bigint, 0::bigint, 0::bigint, 0::numeric),
                   (1, CASE WHEN counted.day IS NOT NULL THEN new_day END, new_strategy,
                    -1::bigint, 0, 0, 0, 0, 0, 0, counted.steps, 0::bigint, 0::bigint,
                    0::bigint, 0::numeric))
           AS p(sign, day, strategy, duration_bucket, {", ".join(PLAN_COUNTERS)})
     WHERE p.day IS NOT NULL
     GROUP BY day, strategy, duration_bucket
    ON CONFLICT ({PLAN_KEY}) DO UPDATE SET {_added(PLAN_COUNTERS)};
    RETURN NULL;
END
$$;

CREATE FUNCTION parley_private.roll_up_steps() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    WITH added AS (SELECT plan_id, count(*) AS n FROM added_steps GROUP BY plan_id),
    counted AS (
        INSERT INTO {PLAN_STEPS} AS c (plan_id, day, strategy, steps)
        SELECT p.id, {PLAN_DAY.format(row="p")}, {PLAN_STRATEGY.format(row="p")}, a.n
          FROM added a JOIN public.agent_plans p ON p.id = a.plan_id
        ON CONFLICT (plan_id) DO UPDATE SET steps = c.steps + excluded.steps
        RETURNING c.plan_id, c.day, c.strategy)
    INSERT INTO {PLAN_ROLLUP} AS r ({PLAN_KEY}, steps)
    SELECT c.day, c.strategy, -1, pg_backend_pid(), sum(a.n)
      FROM counted c JOIN added a USING (plan_id)
     GROUP BY c.day, c.strategy
    ON CONFLICT ({PLAN_KEY}) DO UPDATE SET steps = r.steps + excluded.steps;
    RETURN NULL;
END
$$;

CREATE TRIGGER agent_executions_rolled_up AFTER INSERT ON public.agent_executions
    FOR EACH ROW EXECUTE FUNCTION parley_private.roll_up_execution();
CREATE TRIGGER agent_executions_rolled_up_again AFTER UPDATE ON public.agent_executions
    FOR EACH ROW WHEN {_changed(EXECUTION_WATCHED)}
    EXECUTE FUNCTION parley_private.roll_up_execution();
CREATE TRIGGER agent_plans_rolled_up AFTER INSERT ON public.agent_plans
    FOR EACH ROW EXECUTE FUNCTION parley_private.roll_up_plan();
CREATE TRIGGER agent_plans_rolled_up_again AFTER UPDATE ON public.agent_plans
    FOR EACH ROW WHEN {_changed(PLAN_WATCHED)}
    EXECUTE FUNCTION parley_private.roll_up_plan();
CREATE TRIGGER agent_plan_steps_rolled_up AFTER INSERT ON public.agent_plan_steps
    REFERENCING NEW TABLE AS added_steps
    FOR EACH STATEMENT EXECUTE FUNCTION parley_private.roll_up_steps();

REVOKE ALL ON FUNCTION parley_private.duration_bucket(bigint),
    parley_private.duration_bucket_value(bigint), parley_private.roll_up_execution(),
    parley_private.roll_up_plan(), parley_private.roll_up_steps()
    FROM PUBLIC, anon, authenticated, service_role;
GRANT EXECUTE ON FUNCTION parley_private.duration_bucket_value(bigint) TO service_role;
"""


def _percentile(fraction: float, scale: str) -> str:
    """`percentile_cont(fraction)` over the histogram of a group's rows (each with the group's
    timed total `timed` and the running total `upto` through its bucket): the buckets holding
    the two ranks around it, their values interpolated."""
    x = f"({fraction} * (max(timed) - 1))"
    row_x = f"({fraction} * (timed - 1))"  # the same on every row of the group

    def at(rank: str) -> str:
        bucket = f"min(duration_bucket) FILTER (WHERE duration_bucket >= 0 AND upto > {rank})"
        return f"parley_private.duration_bucket_value({bucket})"

    low, high = at(f"floor({row_x})"), at(f"ceil({row_x})")
    return f"round((({low}) + ({x} - floor({x})) * (({high}) - ({low}))){scale}, 1)"


EXECUTION_GROUP = "day, model, agent_role"
PLAN_GROUP = "day, strategy"


def _execution_stats(where: str) -> str:
    """`execution_stats_daily`'s rows computed from the rollup rows `where` selects (a
    condition on the group's columns: it is applied before the window, so only those groups
    are read)."""
    return f"""
SELECT day, model, agent_role, sum(executions)::bigint AS executions,
       sum(completed)::bigint AS completed, sum(failed)::bigint AS failed,
       sum(timed_out)::bigint AS timed_out, sum(cancelled)::bigint AS cancelled,
       round(sum(completed)::numeric
             / nullif(sum(completed) + sum(failed) + sum(timed_out) + sum(cancelled), 0), 4)
           AS success_rate,
       {_percentile(0.5, "")} AS p50_duration_ms,
       {_percentile(0.95, "")} AS p95_duration_ms,
       sum(llm_calls)::bigint AS llm_calls, sum(prompt_tokens)::bigint AS prompt_tokens,
       sum(completion_tokens)::bigint AS completion_tokens,
       sum(cache_hit_tokens)::bigint AS cache_hit_tokens, sum(cost_usd) AS cost_usd,
       sum(tool_calls)::bigint AS tool_calls,
       sum(permission_denials)::bigint AS permission_denials
  FROM (SELECT r.*,
               sum(executions) FILTER (WHERE duration_bucket >= 0)
                   OVER (PARTITION BY {EXECUTION_GROUP}) AS timed,
               sum(executions) FILTER (WHERE duration_bucket >= 0)
                   OVER (PARTITION BY {EXECUTION_GROUP} ORDER BY duration_bucket) AS upto
          FROM {EXECUTION_ROLLUP} r WHERE {where}) h
 GROUP BY {EXECUTION_GROUP}
HAVING sum(executions) > 0"""


def _plan_outcomes(where: str) -> str:
    """`plan_outcomes_daily`'s rows computed from the rollup rows `where` selects."""
    return f"""
SELECT day, strategy, sum(plans)::bigint AS plans, sum(completed)::bigint AS completed,
       sum(failed)::bigint AS failed, sum(cancelled)::bigint AS cancelled,
       sum(awaiting_approval)::bigint AS awaiting_approval,
       sum(in_progress)::bigint AS in_progress,
       round(sum(completed)::numeric / nullif(sum(completed) + sum(failed) + sum(cancelled), 0),
             4) AS success_rate,
       round(sum(steps)::numeric / sum(plans), 2) AS avg_steps,
       {_percentile(0.5, " / 1000")} AS p50_duration_ms,
       sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
       sum(cache_hit_tokens) AS cache_hit_tokens, sum(cost_usd) AS cost_usd
  FROM (SELECT r.*,
               sum(plans) FILTER (WHERE duration_bucket >= 0)
                   OVER (PARTITION BY {PLAN_GROUP}) AS timed,
               sum(plans) FILTER (WHERE duration_bucket >= 0)
                   OVER (PARTITION BY {PLAN_GROUP} ORDER BY duration_bucket) AS upto
          FROM {PLAN_ROLLUP} r WHERE {where}) h
 GROUP BY {PLAN_GROUP}
HAVING sum(plans) > 0"""


UNFOLDED = "({group}) IN (SELECT {group} FROM {rollup} WHERE shard <> 0)"
"""The groups some backend added to since the last fold."""

SETTLED = f"""
CREATE TABLE {EXECUTION_SETTLED} AS {_execution_stats("false")} WITH NO DATA;
ALTER TABLE {EXECUTION_SETTLED} ADD PRIMARY KEY ({EXECUTION_GROUP});
COMMENT ON TABLE {EXECUTION_SETTLED} IS
    'execution_stats_daily''s rows as of the last fold, for groups with nothing in other shards.';
CREATE TABLE {PLAN_SETTLED} AS {_plan_outcomes("false")} WITH NO DATA;
ALTER TABLE {PLAN_SETTLED} ADD PRIMARY KEY ({PLAN_GROUP});
COMMENT ON TABLE {PLAN_SETTLED} IS
    'plan_outcomes_daily''s rows as of the last fold, for groups with nothing in other shards.';
CREATE INDEX execution_rollup_unfolded_idx ON {EXECUTION_ROLLUP} ({EXECUTION_GROUP})
    WHERE shard <> 0;
CREATE INDEX plan_rollup_unfolded_idx ON {PLAN_ROLLUP} ({PLAN_GROUP}) WHERE shard <> 0;
ALTER TABLE {EXECUTION_SETTLED} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {PLAN_SETTLED} ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON {EXECUTION_SETTLED}, {PLAN_SETTLED} FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT ON {EXECUTION_SETTLED}, {PLAN_SETTLED} TO service_role;
"""
"""The dashboards' rows as of the last fold: a group (a day and model and role, or a day and
strategy) whose rollup rows are all folded is read as its one settled row; only the groups
some backend added to since (today's, mostly) are computed at read time."""


def _public_view(view: str, settled: str, rollup: str, group: str, live: str) -> str:
    def cols(alias: str) -> str:
        return ", ".join(f"{alias}.{c}" for c in group.split(", "))

    unfolded = UNFOLDED.format(group=group, rollup=rollup)
    return f"""
CREATE OR REPLACE VIEW public.{view} WITH (security_invoker = true) AS
SELECT s.* FROM {settled} s
 WHERE NOT EXISTS (SELECT FROM {rollup} r WHERE r.shard <> 0 AND ({cols("r")}) = ({cols("s")}))
UNION ALL
{live.replace("WHERE __unfolded__", "WHERE " + unfolded)};"""


VIEWS = f"""
{_public_view("execution_stats_daily", EXECUTION_SETTLED, EXECUTION_ROLLUP, EXECUTION_GROUP, _execution_stats("__unfolded__"))}
COMMENT ON VIEW public.execution_stats_daily IS
    'Per UTC day x model x agent role: executions, outcome counts, success rate over finished '
    'runs, p50/p95 duration (ms, within 1/32: a histogram), tokens (prompt, completion, '
    'cache hit), cost, tools, denials. Reads the daily rollups, kept as executions are accounted.';
{_public_view("plan_outcomes_daily", PLAN_SETTLED, PLAN_ROLLUP, PLAN_GROUP, _plan_outcomes("__unfolded__"))}
COMMENT ON VIEW public.plan_outcomes_daily IS
    'Per UTC day x strategy: plan counts by outcome, success rate over finished plans, '
    'average steps, median duration (ms, within 1/32: a histogram), tokens and cost. Reads '
    'the daily rollups, kept as plans are accounted.';
"""


def _fold(
    rollup: str, key: str, group: str, counters: Sequence[str], live: str, settled: str
) -> str:
    """Move up to `p_limit` rows of other shards into shard 0, then settle the groups moved."""
    columns = group.split(", ")
    arrays = ", ".join(f"g_{c}" for c in columns)
    return f"""
    WITH moved AS (
        DELETE FROM {rollup} r
         WHERE ({key}) IN (
               SELECT {key} FROM {rollup} WHERE shard <> 0 LIMIT p_limit FOR UPDATE SKIP LOCKED)
        RETURNING r.*),
    merged AS (
        INSERT INTO {rollup} AS r ({key}, {", ".join(counters)})
        SELECT {", ".join(k for k in key.split(", ") if k != "shard")}, 0, {_sums(counters)}
          FROM moved GROUP BY {", ".join(k for k in key.split(", ") if k != "shard")}
        ON CONFLICT ({key}) DO UPDATE SET {_added(counters)}
        RETURNING {group})
    SELECT count(*), {", ".join(f"array_agg({c})" for c in columns)}
      INTO n, {arrays}
      FROM (SELECT DISTINCT {group} FROM merged) g;
    folded := folded + n;
    DELETE FROM {settled}
     WHERE ({group}) IN (SELECT * FROM unnest({arrays}));
    INSERT INTO {settled} {live.replace("__groups__", f"({group}) IN (SELECT * FROM unnest({arrays}))")};"""


FOLD = f"""
CREATE FUNCTION parley_private.fold_rollups(p_limit integer DEFAULT 5000) RETURNS integer
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
    folded integer := 0;
    n integer;
    g_day date[];
    g_model text[];
    g_agent_role text[];
    g_strategy text[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('parley_private.fold_rollups')) THEN
        RETURN 0;  -- another sweep is folding
    END IF;
    {_fold(EXECUTION_ROLLUP, EXECUTION_KEY, EXECUTION_GROUP, EXECUTION_COUNTERS, _execution_stats("__groups__"), EXECUTION_SETTLED)}
    {_fold(PLAN_ROLLUP, PLAN_KEY, PLAN_GROUP, PLAN_COUNTERS, _plan_outcomes("__groups__"), PLAN_SETTLED)}
    RETURN folded;
END
$$;
COMMENT ON FUNCTION parley_private.fold_rollups(integer) IS
    'Fold up to p_limit rollup rows of each table written by backends (shards) into shard 0, '
    'skipping rows a running transaction holds, and settle the groups folded. Returns the '
    'groups folded.';
REVOKE ALL ON FUNCTION parley_private.fold_rollups(integer)
    FROM PUBLIC, anon, authenticated, service_role;
"""

REBUILD = f"""
TRUNCATE {EXECUTION_ROLLUP}, {PLAN_ROLLUP}, {PLAN_STEPS};
INSERT INTO {EXECUTION_ROLLUP} ({EXECUTION_KEY}, {", ".join(EXECUTION_COUNTERS)})
SELECT c.day, c.model, c.agent_role, c.duration_bucket, 0, {_sums(EXECUTION_COUNTERS, "c.")}
  FROM public.agent_executions e,
       LATERAL (VALUES {_execution("e", "1")})
           AS c(sign, day, model, agent_role, duration_bucket, {", ".join(EXECUTION_COUNTERS)})
 GROUP BY c.day, c.model, c.agent_role, c.duration_bucket;
INSERT INTO {PLAN_STEPS} (plan_id, day, strategy, steps)
SELECT p.id, {PLAN_DAY.format(row="p")}, {PLAN_STRATEGY.format(row="p")}, count(*)
  FROM public.agent_plan_steps s JOIN public.agent_plans p ON p.id = s.plan_id
 GROUP BY p.id;
INSERT INTO {PLAN_ROLLUP} ({PLAN_KEY}, {", ".join(PLAN_COUNTERS)})
SELECT c.day, c.strategy, c.duration_bucket, 0, {_sums(PLAN_COUNTERS[:6], "c.")},
       coalesce(sum(s.steps), 0), {_sums(PLAN_COUNTERS[7:], "c.")}
  FROM public.agent_plans p
  LEFT JOIN {PLAN_STEPS} s ON s.plan_id = p.id,
       LATERAL (VALUES {_plan("p", "1")})
           AS c(sign, day, strategy, duration_bucket, {", ".join(PLAN_COUNTERS)})
 GROUP BY c.day, c.strategy, c.duration_bucket;
TRUNCATE {EXECUTION_SETTLED}, {PLAN_SETTLED};
INSERT INTO {EXECUTION_SETTLED} {_execution_stats("true")};
INSERT INTO {PLAN_SETTLED} {_plan_outcomes("true")};
"""
"""Fill the rollups from the detail rows, all in shard 0 (the migration's backfill;
`bench.scale` runs it after growing a database with the triggers off)."""

DETAIL_VIEWS = """
CREATE OR REPLACE VIEW public.execution_stats_daily WITH (security_invoker = true) AS
SELECT (coalesce(e.started_at, e.created_at) AT TIME ZONE 'UTC')::date AS day,
       e.model,
       e.agent_role,
       count(*) AS executions,
       count(*) FILTER (WHERE e.status = 'completed') AS completed,
       count(*) FILTER (WHERE e.status = 'failed') AS failed,
       count(*) FILTER (WHERE e.status = 'timeout') AS timed_out,
       count(*) FILTER (WHERE e.status = 'cancelled') AS cancelled,
       round(count(*) FILTER (WHERE e.status = 'completed')::numeric
             / nullif(count(*) FILTER (
                   WHERE e.status IN ('completed', 'failed', 'timeout', 'cancelled')), 0),
             4) AS success_rate,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY e.duration_ms)::numeric, 1)
           AS p50_duration_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY e.duration_ms)::numeric, 1)
           AS p95_duration_ms,
       sum(e.llm_calls) AS llm_calls,
       sum(e.prompt_tokens) AS prompt_tokens,
       sum(e.completion_tokens) AS completion_tokens,
       sum(e.cache_hit_tokens) AS cache_hit_tokens,
       sum(e.cost_usd) AS cost_usd,
       sum(e.tool_call_count) AS tool_calls,
       sum(e.permission_denials) AS permission_denials
  FROM public.agent_executions e
 GROUP BY 1, 2, 3;
COMMENT ON VIEW public.execution_stats_daily IS
    'Per UTC day x model x agent role: executions, outcome counts, success rate over finished '
    'runs, p50/p95 duration (ms), tokens (prompt, completion, cache hit), cost, tools, denials.';

CREATE OR REPLACE VIEW public.plan_outcomes_daily WITH (security_invoker = true) AS
SELECT (p.created_at AT TIME ZONE 'UTC')::date AS day,
       coalesce(p.strategy, 'undecided') AS strategy,
       count(*) AS plans,
       count(*) FILTER (WHERE p.status = 'completed') AS completed,
       count(*) FILTER (WHERE p.status = 'failed') AS failed,
       count(*) FILTER (WHERE p.status = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE p.status = 'awaiting_approval') AS awaiting_approval,
       count(*) FILTER (WHERE p.status IN ('pending', 'executing')) AS in_progress,
       round(count(*) FILTER (WHERE p.status = 'completed')::numeric
             / nullif(count(*) FILTER (WHERE p.status IN ('completed', 'failed', 'cancelled')), 0),
             4) AS success_rate,
       round(avg(s.steps), 2) AS avg_steps,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY
           extract(epoch FROM p.completed_at - coalesce(p.started_at, p.created_at)) * 1000
       )::numeric, 1) AS p50_duration_ms,
       sum(p.prompt_tokens) AS prompt_tokens,
       sum(p.completion_tokens) AS completion_tokens,
       sum(p.cache_hit_tokens) AS cache_hit_tokens,
       sum(p.cost_usd) AS cost_usd
  FROM public.agent_plans p
  LEFT JOIN LATERAL (
      SELECT count(*) AS steps FROM public.agent_plan_steps st WHERE st.plan_id = p.id
  ) s ON true
 GROUP BY 1, 2;
COMMENT ON VIEW public.plan_outcomes_daily IS
    'Per UTC day x strategy: plan counts by outcome, success rate over finished plans, '
    'average steps, median duration (ms), tokens and cost.';
"""
"""The views as revision 0a1c0e5b0004 made them, over the detail rows (the downgrade's; the
tests compare the rollups with them)."""

DOWNGRADE = """
DROP TRIGGER agent_plan_steps_rolled_up ON public.agent_plan_steps;
DROP TRIGGER agent_plans_rolled_up_again ON public.agent_plans;
DROP TRIGGER agent_plans_rolled_up ON public.agent_plans;
DROP TRIGGER agent_executions_rolled_up_again ON public.agent_executions;
DROP TRIGGER agent_executions_rolled_up ON public.agent_executions;
DROP FUNCTION parley_private.fold_rollups(integer), parley_private.roll_up_steps(),
    parley_private.roll_up_plan(), parley_private.roll_up_execution();
DROP TABLE parley_private.plan_outcomes_settled, parley_private.execution_stats_settled,
    parley_private.plan_rollup_steps, parley_private.plan_rollup, parley_private.execution_rollup;
DROP FUNCTION parley_private.duration_bucket_value(bigint), parley_private.duration_bucket(bigint);
REVOKE USAGE ON SCHEMA parley_private FROM service_role;
"""


def upgrade() -> None:
    op.execute(UPGRADE + SETTLED + FOLD + REBUILD + VIEWS + NEW_ID)


def downgrade() -> None:
    random_ids = "\n".join(
        f"ALTER TABLE public.{t} ALTER COLUMN id SET DEFAULT gen_random_uuid();" for t in ID_TABLES
    )
    op.execute(random_ids + DETAIL_VIEWS + DOWNGRADE + "DROP FUNCTION parley_private.new_id();")
