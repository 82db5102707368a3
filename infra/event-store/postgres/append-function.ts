/**
 * The PostgreSQL functions that write: `append_events` (an append with its tags and key changes,
 * one round trip) and `apply_key_changes` (the key changes alone, also what the standalone vault
 * runs).
 */
import { POSITION_LOCK_CLASS, literal, quoteSchema } from './identifiers.ts';

/**
 * `append_events(stream, category, expected, ids, types, data, metadata, recorded_at, tag_index,
 * tags, keys)`: the whole append in one round trip (and one implicit transaction when called
 * outside BEGIN). `expected`: -1 any, -2 stream_exists, otherwise the exact version (0 = no
 * stream). The events come as parallel arrays; `data` and `metadata` as JSON texts, never taken
 * apart here (PostgreSQL's JSON operators refuse `\\u0000` and unpaired surrogates, which the
 * columns must keep). Tag i belongs to the event at (1-based) index tag_index[i]. `keys` is the
 * KeyChanges as JSON, or null.
 *
 * Returns (ok, version, last_position, gone): on a version mismatch ok is false, version is the
 * actual version and nothing is written. When a key to destroy does not exist, nothing is written
 * either: an append of no events returns ok false with the missing ids in gone, one of events
 * raises RK001 (see below).
 *
 * THE GAP PROBLEM. Identity values are taken before commit, so a transaction can commit position
 * 7 while position 6 is still in flight; a reader following positions would skip 6. Readers
 * therefore only see events whose transaction_id < pg_snapshot_xmin(pg_current_snapshot()): every
 * transaction below xmin has ended, so that set of events is final. That alone is NOT enough for
 * position-ordered reading: transaction A may get its xid before B but its positions after B's,
 * then A commits while B is still open, and A's event is "below xmin" while B's lower position
 * is not yet visible. So the append makes xid order and position order agree: the transaction
 * id is assigned and the positions are drawn inside one critical section (the session-level
 * POSITION lock, held only for the INSERT, not until commit, so commits still run in parallel).
 * Hence for appends A, B: xid(A) < xid(B) implies every position of A < every position of B, and
 * when the event at position P has xid < xmin, every lower position belongs to a transaction
 * below xmin too: it is visible (committed) or gone (rolled back). Nothing below P can appear
 * later. Writers that bypass this function must follow the same protocol (lock, assign the xid,
 * insert, unlock, before any other write in their transaction).
 *
 * The stream lock is taken first, and the stream version read after it in a statement of its own
 * (READ COMMITTED: a fresh snapshot that sees the previous holder's commit). The transaction has
 * written nothing before the POSITION lock, so its xid is assigned inside it. That is why the key
 * changes (which write, and lock rows, which assigns an xid too) come after the events: when a key
 * to destroy turns out to be gone, the function raises RK001 (detail: the ids as a JSON array) to
 * undo the events. An append of no events has no positions to order: its key changes come first.
 */
export const appendFunctionSql = (schema: string): string => {
  const s = quoteSchema(schema);
  const schemaHash = `hashtext(${literal(schema)})`;
  return `
  CREATE OR REPLACE FUNCTION ${s}.append_events(
    p_stream text, p_category text, p_expected bigint,
    p_ids text[], p_types text[], p_data json[], p_metadata json[], p_recorded_at timestamptz[],
    p_tag_index int[], p_tags text[], p_keys json)
  RETURNS TABLE (ok boolean, version bigint, last_position bigint, gone text[])
  LANGUAGE plpgsql VOLATILE AS $fn$
  #variable_conflict use_column
  DECLARE
    v_current bigint;
    v_count bigint := coalesce(cardinality(p_ids), 0);
    v_last bigint;
    v_positions bigint[];
    v_gone text[];
  BEGIN
    PERFORM pg_advisory_xact_lock((${schemaHash}::bigint << 32) | (hashtext(p_stream)::bigint & 4294967295));
    SELECT st.version INTO v_current FROM ${s}.streams st WHERE st.stream_name = p_stream;
    v_current := coalesce(v_current, 0);
    IF NOT (p_expected = -1 OR (p_expected = -2 AND v_current > 0) OR p_expected = v_current) THEN
      RETURN QUERY SELECT false, v_current, 0::bigint, NULL::text[];
      RETURN;
    END IF;
    IF v_count = 0 THEN
      IF p_keys IS NOT NULL THEN
        v_gone := ${s}.apply_key_changes(p_keys);
        IF v_gone IS NOT NULL THEN
          RETURN QUERY SELECT false, v_current, 0::bigint, v_gone;
          RETURN;
        END IF;
      END IF;
      SELECT e.global_position INTO v_last FROM ${s}.events e
       WHERE e.stream_name = p_stream AND e.stream_version = v_current;
      RETURN QUERY SELECT true, v_current, coalesce(v_last, 0), NULL::text[];
      RETURN;
    END IF;
    PERFORM pg_advisory_lock(${POSITION_LOCK_CLASS}, ${schemaHash});
    BEGIN
      PERFORM pg_current_xact_id();
      WITH inserted AS (
        INSERT INTO ${s}.events (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at)
        SELECT x.id, p_stream, p_category, v_current + x.n, x.type, x.data, x.metadata,
               coalesce(x.recorded_at, date_trunc('milliseconds', now()))
          FROM unnest(p_ids, p_types, p_data, p_metadata, p_recorded_at) WITH ORDINALITY AS x(id, type, data, metadata, recorded_at, n)
         ORDER BY x.n
        RETURNING global_position, stream_version
      )
      SELECT array_agg(inserted.global_position ORDER BY inserted.stream_version) INTO v_positions FROM inserted;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
      PERFORM pg_advisory_unlock(${POSITION_LOCK_CLASS}, ${schemaHash});
      RAISE;
    END;
    PERFORM pg_advisory_unlock(${POSITION_LOCK_CLASS}, ${schemaHash});
    v_last := v_positions[v_count];
    IF p_keys IS NOT NULL THEN
      v_gone := ${s}.apply_key_changes(p_keys);
      IF v_gone IS NOT NULL THEN
        -- Undoes the events: a destruction is recorded once, with the key's deletion, or not at all.
        RAISE EXCEPTION USING ERRCODE = 'RK001', MESSAGE = 'data key gone', DETAIL = array_to_json(v_gone)::text;
      END IF;
    END IF;
    IF cardinality(p_tags) > 0 THEN
      INSERT INTO ${s}.event_tags (tag, global_position)
      SELECT t.tag, v_positions[t.i] FROM unnest(p_tag_index, p_tags) AS t(i, tag)
      ON CONFLICT DO NOTHING;
    END IF;
    INSERT INTO ${s}.streams AS st (stream_name, version) VALUES (p_stream, v_current + v_count)
      ON CONFLICT (stream_name) DO UPDATE SET version = excluded.version;
    -- No pg_notify here: the store tells listeners after the commit (append-notifier.ts: why).
    RETURN QUERY SELECT true, v_current + v_count, v_last, NULL::text[];
  END
  $fn$;
`;
};

/**
 * `apply_key_changes(keys json)`: put, release, retireScopes, destroy, in that order. The rows to
 * destroy are locked first (FOR UPDATE), then the rows required or released (FOR KEY SHARE), each
 * in id order (two transactions touching the same keys wait for each other instead of
 * deadlocking); then every key to destroy must exist and every required key may still be used: if
 * one may not, its id (and any other such one) is returned and nothing is written. Returns null
 * once applied. A release (`"id"`, one use, or `{"id", "uses"}`) of a key that exists is a row of
 * `data_key_releases` (unknown ids are ignored); a key's uses left are `uses_left` less its
 * releases, down to 0, and `fold_key_releases()` moves the releases into `uses_left`.
 *
 * Why releases are rows of their own: every delivery releases a use of its batch's key in its
 * append. As an UPDATE of the key's row, the 50 deliveries of a send of 50 waited for each other's
 * commit (a row lock lasts until the commit's WAL flush): ~170 deliveries a second on this VM,
 * and every append waiting behind them held back the readers' snapshot horizon (append-function's
 * gap rule), so delivery and publishing stalled together. Key-share locks do not conflict with
 * each other: releases, and the requires of the sends sealing under the same window key, run side
 * by side; only a destruction waits for them (and they for it).
 */
export const applyKeyChangesFunctionSql = (schema: string): string => {
  const s = quoteSchema(schema);
  return `
  CREATE OR REPLACE FUNCTION ${s}.apply_key_changes(p_keys json)
  RETURNS text[]
  LANGUAGE plpgsql VOLATILE AS $fn$
  DECLARE
    v_destroy text[] := ARRAY(SELECT json_array_elements_text(coalesce(p_keys->'destroy', '[]')));
    v_require text[] := ARRAY(SELECT json_array_elements_text(coalesce(p_keys->'require', '[]')));
    v_release json := (
      SELECT coalesce(json_agg(json_build_object('id', r.id, 'uses', r.uses)), '[]')
        FROM (SELECT coalesce(e->>'id', e #>> '{}') AS id, sum(coalesce((e->>'uses')::integer, 1))::integer AS uses
                FROM json_array_elements(coalesce(p_keys->'release', '[]')) AS e
               GROUP BY 1) r);
    v_gone text[];
    v_id text;
  BEGIN
    -- One pass in id order, each row in its own mode: no two appends lock the same keys in opposite orders.
    FOR v_id IN SELECT DISTINCT x.id COLLATE "C" FROM unnest(v_destroy || v_require || ARRAY(SELECT r.id FROM json_to_recordset(v_release) AS r(id text))) AS x(id) ORDER BY 1 LOOP
      IF v_id = ANY (v_destroy) THEN
        PERFORM 1 FROM ${s}.data_keys k WHERE k.id = v_id FOR UPDATE;
      ELSE
        PERFORM 1 FROM ${s}.data_keys k WHERE k.id = v_id FOR KEY SHARE;
      END IF;
    END LOOP;
    SELECT array_agg(x.id ORDER BY x.n) INTO v_gone FROM (
      SELECT d.id, d.n FROM unnest(v_destroy) WITH ORDINALITY AS d(id, n)
       WHERE NOT EXISTS (SELECT 1 FROM ${s}.data_keys k WHERE k.id = d.id)
      UNION ALL
      -- A key may seal more only while it can still be used: not used up, expired or retired.
      SELECT q.id, cardinality(v_destroy) + q.n FROM unnest(v_require) WITH ORDINALITY AS q(id, n)
       WHERE NOT EXISTS (SELECT 1 FROM ${s}.data_keys k
                          WHERE k.id = q.id AND k.expires_at > now() AND NOT k.scope_retired
                            AND k.uses_left > coalesce((SELECT sum(r.uses) FROM ${s}.data_key_releases r WHERE r.key_id = k.id), 0))
    ) x;
    IF v_gone IS NOT NULL THEN
      RETURN v_gone;
    END IF;
    IF json_array_length(coalesce(p_keys->'put', '[]')) > 0 THEN
      INSERT INTO ${s}.data_keys (id, scope, subject, uses, uses_left, expires_at)
      SELECT p.id, p.scope, p.subject, p.uses, p.uses, p."expiresAt"
        FROM json_to_recordset(p_keys->'put') AS p(id text, scope text, subject text, uses integer, "expiresAt" timestamptz);
      INSERT INTO ${s}.data_key_material (id, wrapped)
      SELECT p.id, p.wrapped FROM json_to_recordset(p_keys->'put') AS p(id text, wrapped text);
    END IF;
    IF json_array_length(v_release) > 0 THEN
      INSERT INTO ${s}.data_key_releases (key_id, uses)
      SELECT r.id, r.uses FROM json_to_recordset(v_release) AS r(id text, uses integer)
       WHERE r.uses > 0 AND EXISTS (SELECT 1 FROM ${s}.data_keys k WHERE k.id = r.id);
    END IF;
    IF json_array_length(coalesce(p_keys->'retireScopes', '[]')) > 0 THEN
      UPDATE ${s}.data_keys k SET scope_retired = true
       WHERE k.scope IN (SELECT json_array_elements_text(p_keys->'retireScopes')) AND NOT k.scope_retired;
    END IF;
    IF cardinality(v_destroy) > 0 THEN
      DELETE FROM ${s}.data_key_material m WHERE m.id = ANY (v_destroy);
      DELETE FROM ${s}.data_keys k WHERE k.id = ANY (v_destroy);
    END IF;
    RETURN NULL;
  END
  $fn$;

  -- Moves the releases into the keys' uses_left (the key vault's due() runs it first). The keys'
  -- rows are locked first, in id order, as apply_key_changes locks them (a destruction, whose
  -- cascade deletes the key's releases, and a fold so never wait for each other in a circle); a
  -- concurrent fold waits, then finds those releases gone.
  CREATE OR REPLACE FUNCTION ${s}.fold_key_releases()
  RETURNS void
  LANGUAGE plpgsql VOLATILE AS $fn$
  DECLARE
    v_ids text[];
  BEGIN
    SELECT array_agg(k.id) INTO v_ids FROM (
      SELECT k.id FROM ${s}.data_keys k
       WHERE k.id IN (SELECT r.key_id FROM ${s}.data_key_releases r)
       ORDER BY k.id FOR NO KEY UPDATE) k;
    IF v_ids IS NULL THEN
      RETURN;
    END IF;
    WITH gone AS (DELETE FROM ${s}.data_key_releases r WHERE r.key_id = ANY (v_ids) RETURNING r.key_id, r.uses),
         summed AS (SELECT gone.key_id, sum(gone.uses) AS uses FROM gone GROUP BY gone.key_id)
    UPDATE ${s}.data_keys k SET uses_left = greatest(k.uses_left - summed.uses, 0)
      FROM summed WHERE k.id = summed.key_id;
  END
  $fn$;
`;
};
