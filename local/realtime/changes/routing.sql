-- Which subscribers may see a captured change, and what each of them receives.
--
-- A port of Supabase Realtime's tenant functions (github.com/supabase/realtime,
-- priv/repo/tenant_schema/realtime/functions/{check_equality_op,is_visible_through_filters,
-- subscription_check_filters,apply_rls}.sql, Apache-2.0), reading `parley_realtime.changes`
-- instead of wal2json output and taking subscriptions as a jsonb argument instead of the
-- `realtime.subscription` table. Semantics kept: filters compare after casting to the column
-- type and NULL never matches; INSERT/UPDATE are checked against RLS by selecting the row by its
-- primary key as the subscriber's role with its JWT claims; DELETE bypasses RLS and carries
-- only the primary key of RLS-enabled tables; `old_record` holds the replica identity columns.

CREATE OR REPLACE FUNCTION parley_realtime.check_equality_op(
    op text, type_ regtype, val_1 text, val_2 text, negate boolean
) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    op_symbol text;
    res boolean;
BEGIN
    IF op = 'isdistinct' THEN
        EXECUTE format('SELECT %L::%s %s %L::%s', val_1, type_,
                       CASE WHEN negate THEN 'IS NOT DISTINCT FROM' ELSE 'IS DISTINCT FROM' END,
                       val_2, type_) INTO res;
        RETURN res;
    END IF;
    IF op = 'is' THEN
        EXECUTE format('SELECT %L::%s %s %s', val_1, type_,
                       CASE WHEN negate THEN 'IS NOT' ELSE 'IS' END, upper(val_2)) INTO res;
        RETURN res;
    END IF;
    op_symbol := CASE op
        WHEN 'eq' THEN '=' WHEN 'neq' THEN '!=' WHEN 'lt' THEN '<' WHEN 'lte' THEN '<='
        WHEN 'gt' THEN '>' WHEN 'gte' THEN '>=' WHEN 'in' THEN '= any'
        WHEN 'like' THEN 'LIKE' WHEN 'ilike' THEN 'ILIKE' WHEN 'match' THEN '~'
        WHEN 'imatch' THEN '~*' END;
    IF op_symbol IS NULL THEN
        RAISE EXCEPTION 'unsupported equality operator: %', op;
    END IF;
    EXECUTE format('SELECT %L::%s %s (%L::%s)', val_1, type_, op_symbol, val_2,
                   CASE WHEN op = 'in' THEN type_::text || '[]' ELSE type_::text END) INTO res;
    RETURN CASE WHEN negate THEN NOT res ELSE res END;
END
$fn$;

-- filters: [[column, op, value, negate], ...]; row_: the column values to test.
CREATE OR REPLACE FUNCTION parley_realtime.is_visible_through_filters(
    entity regclass, row_ jsonb, filters jsonb
) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    f jsonb;
    col_type regtype;
BEGIN
    IF filters IS NULL OR jsonb_array_length(filters) = 0 THEN
        RETURN true;
    END IF;
    FOR f IN SELECT value FROM jsonb_array_elements(filters) LOOP
        IF row_ IS NULL OR NOT row_ ? (f ->> 0) THEN
            RETURN false;
        END IF;
        SELECT a.atttypid::regtype INTO col_type FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = entity AND a.attname = f ->> 0 AND NOT a.attisdropped;
        IF NOT coalesce(parley_realtime.check_equality_op(
                f ->> 1, col_type, row_ ->> (f ->> 0), f ->> 2, (f ->> 3)::boolean), false) THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$fn$;

-- The subscription-time checks of `realtime.subscription_check_filters`: raises with the real
-- server's messages when a filter or selected column is unusable for `role` on `entity`.
CREATE OR REPLACE FUNCTION parley_realtime.check_subscription(
    entity regclass, role_name text, filters jsonb, selected_columns text[]
) RETURNS void
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    col_names text[];
    f jsonb;
    col_type regtype;
    in_val jsonb;
    selected text;
BEGIN
    IF to_regrole(role_name) IS NULL THEN
        RAISE EXCEPTION 'role "%" does not exist', role_name USING ERRCODE = 'undefined_object';
    END IF;
    col_names := ARRAY(
        SELECT a.attname FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = entity AND a.attnum > 0 AND NOT a.attisdropped
           AND pg_catalog.has_column_privilege(role_name, a.attrelid, a.attnum, 'SELECT')
         ORDER BY a.attnum);
    FOR f IN SELECT value FROM jsonb_array_elements(coalesce(filters, '[]')) LOOP
        IF NOT (f ->> 0) = ANY (col_names) THEN
            RAISE EXCEPTION 'invalid column for filter %', f ->> 0;
        END IF;
        SELECT a.atttypid::regtype INTO col_type FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = entity AND a.attname = f ->> 0;
        IF f ->> 1 = 'in' THEN
            EXECUTE format('SELECT to_jsonb(%L::%s[])', f ->> 2, col_type) INTO in_val;
            IF coalesce(jsonb_array_length(in_val), 0) > 100 THEN
                RAISE EXCEPTION 'too many values for `in` filter. Maximum 100';
            END IF;
        ELSIF f ->> 1 = 'is' THEN
            IF f ->> 2 NOT IN ('null', 'true', 'false', 'unknown') THEN
                RAISE EXCEPTION 'invalid value for is filter: must be null, true, false, or unknown';
            END IF;
            IF f ->> 2 <> 'null' AND col_type <> 'boolean'::regtype THEN
                RAISE EXCEPTION 'is % filter requires a boolean column, got %', f ->> 2, col_type;
            END IF;
        ELSIF f ->> 1 IN ('like', 'ilike') THEN
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_operator
                            WHERE oprname = '~~' AND oprleft = col_type) THEN
                RAISE EXCEPTION 'operator % requires a text-compatible column type, got %',
                    f ->> 1, col_type;
            END IF;
        ELSIF f ->> 1 IN ('match', 'imatch') THEN
            IF NOT EXISTS (
                SELECT 1 FROM pg_catalog.pg_operator
                 WHERE oprname = CASE WHEN f ->> 1 = 'imatch' THEN '~*' ELSE '~' END
                   AND oprleft = col_type AND oprright = col_type
                   AND oprresult = 'boolean'::regtype) THEN
                RAISE EXCEPTION 'operator % requires a text-compatible column type, got %',
                    f ->> 1, col_type;
            END IF;
            BEGIN
                PERFORM '' ~ (f ->> 2);
            EXCEPTION WHEN others THEN
                RAISE EXCEPTION 'invalid regular expression for % filter: %', f ->> 1, sqlerrm;
            END;
        ELSE
            EXECUTE format('SELECT to_jsonb(%L::%s)', f ->> 2, col_type);
        END IF;
    END LOOP;
    FOREACH selected IN ARRAY coalesce(selected_columns, '{}') LOOP
        IF NOT selected = ANY (col_names) THEN
            RAISE EXCEPTION 'invalid column for select %', selected;
        END IF;
    END LOOP;
END
$fn$;

-- What routing needs to know about a table: its schema and name, whether RLS is on, and its
-- columns in attnum order ({"name", "type", "pk", "bytea"}) with the replica identity ones
-- (what wal2json reports as "identity"). plpgsql, so the catalog queries' plans are cached.
CREATE OR REPLACE FUNCTION parley_realtime.table_meta(entity regclass) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    meta jsonb;
    replident "char";
BEGIN
    SELECT jsonb_build_object('schema', n.nspname, 'table', c.relname, 'rls', c.relrowsecurity),
           c.relreplident
      INTO meta, replident
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = entity;
    meta := meta || jsonb_build_object('columns', (
        SELECT jsonb_agg(jsonb_build_object(
                   'name', a.attname, 'type', t.typname,
                   'pk', coalesce(a.attnum = ANY (pk.indkey), false),
                   'bytea', a.atttypid = 'bytea'::regtype,
                   'identity', CASE replident
                       WHEN 'f' THEN true
                       WHEN 'd' THEN coalesce(a.attnum = ANY (pk.indkey), false)
                       WHEN 'i' THEN coalesce(a.attnum = ANY (ri.indkey), false)
                       ELSE false END)
                 ORDER BY a.attnum)
          FROM pg_catalog.pg_attribute a
          JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
          LEFT JOIN pg_catalog.pg_index pk ON pk.indrelid = entity AND pk.indisprimary
          LEFT JOIN pg_catalog.pg_index ri ON ri.indrelid = entity AND ri.indisreplident
         WHERE a.attrelid = entity AND a.attnum > 0 AND NOT a.attisdropped));
    RETURN meta;
END
$fn$;

-- One captured change as the payload `data` of each subscriber group that may see it.
-- subscriptions: [{"id": text, "role": text, "claims": {...}, "filters": [...],
--                  "select": [..] | null}, ...], all on the change's table.
CREATE OR REPLACE FUNCTION parley_realtime.apply_rls(
    change_id bigint, subscriptions jsonb, max_record_bytes integer DEFAULT 1048576
) RETURNS TABLE (data jsonb, subscription_ids text[])
LANGUAGE plpgsql AS $fn$
DECLARE
    ch record;
    entity regclass;
    action text;
    is_rls boolean;
    meta jsonb;
    pkey text[];
    new_row jsonb;
    old_row jsonb;
    too_big boolean;
    header jsonb;
    role_name text;
    role_subs jsonb[];
    sub jsonb;
    selectable text[];
    rls_stmt text;
    visible text[];
    ok boolean;
    grp jsonb;
    sel text[];
    ids text[];
BEGIN
    SELECT c.relid, c.action, c.record, c.old_record, c.captured_at, c.xmin AS xid
      INTO ch FROM parley_realtime.changes c WHERE c.id = change_id;
    IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = ch.relid) THEN
        RETURN;
    END IF;
    entity := ch.relid::regclass;
    action := CASE ch.action WHEN 'I' THEN 'INSERT' WHEN 'U' THEN 'UPDATE' ELSE 'DELETE' END;
    meta := parley_realtime.table_meta(entity);
    is_rls := (meta ->> 'rls')::boolean;
    pkey := ARRAY(SELECT m ->> 'name' FROM jsonb_array_elements(meta -> 'columns') m
                   WHERE (m ->> 'pk')::boolean);
    new_row := ch.record;
    old_row := (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(ch.old_record) e
                 WHERE e.key IN (SELECT m ->> 'name' FROM jsonb_array_elements(meta -> 'columns') m
                                  WHERE (m ->> 'identity')::boolean));
    too_big := octet_length(coalesce(new_row::text, '') || coalesce(old_row::text, ''))
               > max_record_bytes;
    header := jsonb_build_object('schema', meta -> 'schema', 'table', meta -> 'table', 'type', action);

    FOR role_name IN
        SELECT DISTINCT s ->> 'role' FROM jsonb_array_elements(subscriptions) s ORDER BY 1
    LOOP
        role_subs := ARRAY(SELECT s FROM jsonb_array_elements(subscriptions) s
                            WHERE s ->> 'role' = role_name);
        selectable := ARRAY(SELECT m ->> 'name' FROM jsonb_array_elements(meta -> 'columns') m
                             WHERE pg_catalog.has_column_privilege(role_name, entity, m ->> 'name',
                                                                   'SELECT'));

        IF action <> 'DELETE' AND (cardinality(pkey) = 0 OR NOT pkey <@ selectable) THEN
            FOR grp IN SELECT DISTINCT s -> 'select' FROM unnest(role_subs) s LOOP
                data := header || jsonb_build_object(
                    'commit_timestamp', NULL, 'columns', '[]'::jsonb, 'record', '{}'::jsonb,
                    'errors', jsonb_build_array(CASE WHEN cardinality(pkey) = 0
                        THEN 'Error 400: Bad Request, no primary key'
                        ELSE 'Error 401: Unauthorized' END));
                subscription_ids := ARRAY(SELECT s ->> 'id' FROM unnest(role_subs) s
                                           WHERE (s -> 'select') IS NOT DISTINCT FROM grp);
                RETURN NEXT;
            END LOOP;
            CONTINUE;
        END IF;

        IF is_rls AND action <> 'DELETE' THEN
            rls_stmt := format('SELECT EXISTS (SELECT 1 FROM %s WHERE %s)', entity,
                (SELECT string_agg(format('%I = %L', k, new_row ->> k), ' AND ') FROM unnest(pkey) k));
        END IF;
        visible := '{}';
        FOREACH sub IN ARRAY role_subs LOOP
            CONTINUE WHEN NOT parley_realtime.is_visible_through_filters(
                entity, CASE WHEN action = 'DELETE' THEN old_row ELSE new_row END, sub -> 'filters');
            IF is_rls AND action <> 'DELETE' THEN
                BEGIN
                    PERFORM set_config('role', role_name, true),
                            set_config('request.jwt.claims', (sub -> 'claims')::text, true);
                    EXECUTE rls_stmt INTO ok;
                    PERFORM set_config('role', NULL, true);
                EXCEPTION WHEN others THEN
                    ok := false;  -- a policy that fails to evaluate hides the row
                END;
                CONTINUE WHEN NOT coalesce(ok, false);
            END IF;
            visible := visible || (sub ->> 'id');
        END LOOP;

        FOR grp IN SELECT DISTINCT s -> 'select' FROM unnest(role_subs) s LOOP
            ids := ARRAY(SELECT s ->> 'id' FROM unnest(role_subs) s
                          WHERE (s -> 'select') IS NOT DISTINCT FROM grp AND s ->> 'id' = ANY (visible));
            CONTINUE WHEN cardinality(ids) = 0;
            sel := CASE WHEN jsonb_typeof(grp) = 'array'
                        THEN ARRAY(SELECT jsonb_array_elements_text(grp)) END;
            data := parley_realtime.change_data(
                meta -> 'columns', action, header, new_row, old_row, selectable, sel, is_rls, too_big,
                to_char(parley_realtime.commit_time(ch.xid, ch.captured_at) AT TIME ZONE 'utc',
                        'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
            subscription_ids := ids;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$fn$;

-- The commit time when Postgres tracks it, else the moment the row was captured.
CREATE OR REPLACE FUNCTION parley_realtime.commit_time(xid xid, captured_at timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    IF current_setting('track_commit_timestamp') = 'on' THEN
        RETURN coalesce(pg_catalog.pg_xact_commit_timestamp(xid), captured_at);
    END IF;
    RETURN captured_at;
END
$fn$;

-- The `data` object of a postgres_changes message for one role and column selection.
CREATE OR REPLACE FUNCTION parley_realtime.change_data(
    meta jsonb, action text, header jsonb, new_row jsonb, old_row jsonb,
    selectable text[], sel text[], is_rls boolean, too_big boolean, commit_timestamp text
) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    RETURN (WITH cols AS (
        SELECT m ->> 'name' AS name, m ->> 'type' AS type_name, (m ->> 'pk')::boolean AS is_pkey,
               (m ->> 'bytea')::boolean AS is_bytea, n
          FROM jsonb_array_elements(meta) WITH ORDINALITY AS c(m, n)
         WHERE m ->> 'name' = ANY (selectable)
           AND (sel IS NULL OR m ->> 'name' = ANY (sel) OR (m ->> 'pk')::boolean)
    ), vals AS (
        -- wal2json renders bytea as bare hex (no \x); to_jsonb() keeps the prefix.
        SELECT c.name, c.is_pkey, src.which,
               CASE WHEN c.is_bytea AND jsonb_typeof(src.value) = 'string'
                    THEN to_jsonb(substr(src.value #>> '{}', 3)) ELSE src.value END AS value
          FROM cols c
          JOIN (SELECT 'new' AS which, e.key, e.value FROM jsonb_each(new_row) e
                UNION ALL
                SELECT 'old', e.key, e.value FROM jsonb_each(old_row) e) src ON src.key = c.name
         WHERE NOT too_big OR octet_length(src.value::text) <= 64
    )
    SELECT header || jsonb_build_object(
        'commit_timestamp', commit_timestamp,
        'columns', coalesce((SELECT jsonb_agg(jsonb_build_object('name', name, 'type', type_name)
                                                   ORDER BY n) FROM cols), '[]'),
        'errors', CASE WHEN too_big THEN '["Error 413: Payload Too Large"]'::jsonb END)
    || CASE WHEN action IN ('INSERT', 'UPDATE') THEN jsonb_build_object('record', coalesce(
           (SELECT jsonb_object_agg(name, value) FROM vals WHERE which = 'new'), '{}'))
       ELSE '{}' END
    || CASE WHEN action IN ('UPDATE', 'DELETE') THEN jsonb_build_object('old_record', coalesce(
           (SELECT jsonb_object_agg(name, value) FROM vals
             WHERE which = 'old' AND (action = 'UPDATE' OR NOT is_rls OR is_pkey)), '{}'))
       ELSE '{}' END);
END
$fn$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA parley_realtime FROM PUBLIC;
