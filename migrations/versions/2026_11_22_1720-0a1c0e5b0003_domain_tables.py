"""Domain tables behind the built-in tools: projects, tasks, notes, brain dumps, calendar events.

Users own and fully manage their rows (RLS on `auth.uid()`, WITH CHECK on writes). References
between domain rows are composite `(id, user_id)` foreign keys, so a row can only point at a row
of the same user — a plain foreign key would let user A attach a task to user B's project,
because FK checks do not apply RLS. Text columns that tools search carry trigram indexes.

Revision ID: 0a1c0e5b0003
Revises: 0a1c0e5b0002
Create Date: 2026-11-22 17:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0a1c0e5b0003"
down_revision: str | None = "0a1c0e5b0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("projects", "tasks", "notes", "brain_dumps", "calendar_events")

UPGRADE = """
CREATE TABLE public.projects (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '',
    executive_summary text NOT NULL DEFAULT '',
    context text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'paused', 'completed', 'archived')),
    start_date date,
    end_date date CHECK (end_date IS NULL OR start_date IS NULL OR end_date >= start_date),
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (id, user_id)
);
CREATE INDEX projects_user_idx ON public.projects (user_id, updated_at DESC);

CREATE TABLE public.tasks (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    project_id uuid,
    parent_task_id uuid,
    title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 300),
    description text NOT NULL DEFAULT '',
    details text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'backlog'
        CHECK (status IN ('backlog', 'in_progress', 'done', 'blocked')),
    priority text NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high')),
    task_type text NOT NULL DEFAULT 'one_off' CHECK (task_type IN ('one_off', 'recurring')),
    duration_minutes integer NOT NULL DEFAULT 60 CHECK (duration_minutes BETWEEN 1 AND 1440),
    start_date timestamptz,
    recurrence_pattern text CHECK (recurrence_pattern IN (
        'daily', 'weekdays', 'weekly', 'biweekly', 'monthly')),
    recurrence_ends date,
    completed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (id, user_id),
    FOREIGN KEY (project_id, user_id) REFERENCES public.projects (id, user_id)
        ON DELETE SET NULL (project_id),
    FOREIGN KEY (parent_task_id, user_id) REFERENCES public.tasks (id, user_id)
        ON DELETE SET NULL (parent_task_id)
);
CREATE INDEX tasks_user_idx ON public.tasks (user_id, created_at DESC);
CREATE INDEX tasks_project_idx ON public.tasks (project_id, user_id) WHERE project_id IS NOT NULL;
CREATE INDEX tasks_parent_idx ON public.tasks (parent_task_id, user_id)
    WHERE parent_task_id IS NOT NULL;

CREATE TABLE public.notes (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    project_id uuid,
    title text NOT NULL DEFAULT '' CHECK (char_length(title) <= 300),
    content text NOT NULL,
    category text,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, user_id) REFERENCES public.projects (id, user_id)
        ON DELETE SET NULL (project_id)
);
CREATE INDEX notes_user_idx ON public.notes (user_id, created_at DESC);
CREATE INDEX notes_project_idx ON public.notes (project_id, user_id) WHERE project_id IS NOT NULL;

CREATE TABLE public.brain_dumps (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    project_id uuid,
    title text NOT NULL DEFAULT '' CHECK (char_length(title) <= 300),
    content text NOT NULL,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, user_id) REFERENCES public.projects (id, user_id)
        ON DELETE SET NULL (project_id)
);
CREATE INDEX brain_dumps_user_idx ON public.brain_dumps (user_id, created_at DESC);
CREATE INDEX brain_dumps_project_idx ON public.brain_dumps (project_id, user_id)
    WHERE project_id IS NOT NULL;

CREATE TABLE public.calendar_events (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    task_id uuid,
    title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 300),
    description text NOT NULL DEFAULT '',
    start_at timestamptz NOT NULL,
    end_at timestamptz NOT NULL,
    recurrence_pattern text CHECK (recurrence_pattern IN (
        'daily', 'weekdays', 'weekly', 'biweekly', 'monthly')),
    deleted_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (end_at > start_at),
    FOREIGN KEY (task_id, user_id) REFERENCES public.tasks (id, user_id)
        ON DELETE SET NULL (task_id)
);
CREATE INDEX calendar_events_user_time_idx ON public.calendar_events (user_id, start_at)
    WHERE deleted_at IS NULL;
CREATE INDEX calendar_events_task_idx ON public.calendar_events (task_id, user_id)
    WHERE task_id IS NOT NULL;

-- Trigram indexes, wherever pg_trgm lives (Supabase: `extensions`; created there on plain PG).
DO $$
DECLARE
    ops text := (SELECT format('%I.gin_trgm_ops', n.nspname)
                   FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                  WHERE e.extname = 'pg_trgm');
BEGIN
    EXECUTE format('CREATE INDEX projects_search_idx ON public.projects USING gin '
                   '((name || '' '' || description || '' '' || executive_summary) %s)', ops);
    EXECUTE format('CREATE INDEX tasks_search_idx ON public.tasks USING gin '
                   '((title || '' '' || description) %s)', ops);
    EXECUTE format('CREATE INDEX notes_search_idx ON public.notes USING gin '
                   '((title || '' '' || content) %s)', ops);
    EXECUTE format('CREATE INDEX brain_dumps_search_idx ON public.brain_dumps USING gin '
                   '((title || '' '' || content) %s)', ops);
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['projects', 'tasks', 'notes', 'brain_dumps', 'calendar_events']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON public.%I FOR EACH ROW '
                       'EXECUTE FUNCTION public.set_updated_at()', t || '_updated_at', t);
        EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY %I ON public.%I FOR SELECT TO authenticated '
                       'USING (user_id = (SELECT auth.uid()))', t || '_select', t);
        EXECUTE format('CREATE POLICY %I ON public.%I FOR INSERT TO authenticated '
                       'WITH CHECK (user_id = (SELECT auth.uid()))', t || '_insert', t);
        EXECUTE format('CREATE POLICY %I ON public.%I FOR UPDATE TO authenticated '
                       'USING (user_id = (SELECT auth.uid())) '
                       'WITH CHECK (user_id = (SELECT auth.uid()))', t || '_update', t);
        EXECUTE format('CREATE POLICY %I ON public.%I FOR DELETE TO authenticated '
                       'USING (user_id = (SELECT auth.uid()))', t || '_delete', t);
        EXECUTE format('REVOKE ALL ON public.%I FROM anon, authenticated', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%I TO authenticated', t);
        EXECUTE format('GRANT ALL ON public.%I TO service_role', t);
    END LOOP;
END
$$;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE " + ", ".join(f"public.{t}" for t in reversed(TABLES)))
