import Database from 'better-sqlite3';
import type { GroupCommit } from '../../sqlite/group-commit.ts';
import { MAX_KEY_CHANGES, releasedUses, retiredBecause, validKeyIds, validLimit, validStoredKey, type CheckedKeyChanges, type KeyUses } from '../data-keys.ts';
import { DataKeyGoneError, type KeyVault, type StoredDataKey } from '../port.ts';
import { epochMs } from '../validation.ts';
import { keySql, type KeyRow } from './schema.ts';

/**
 * The data keys of the SQLite event store, in its own file (table `data_keys`): changed inside
 * the appends' transactions, and read and released as a KeyVault.
 *
 * A destroyed key's row is deleted under `PRAGMA secure_delete = ON` (set by the store), so its
 * bytes are overwritten in the page; `onDestroyed` then has the store truncate the WAL, which
 * still holds earlier images of that page (docs/durability.md).
 */
export const createSqliteDataKeys = (
  db: Database.Database,
  options: {
    readonly groupCommit: GroupCommit;
    /** Runs a synchronous read, mapping failures (and use after close) to the store's errors. */
    readonly guard: <T>(operation: () => T) => T;
    readonly onDestroyed: () => void;
  },
) => {
  const insert = db.prepare(keySql.insert);
  const importOne = db.prepare(keySql.importOne);
  const release = db.prepare<[number, string]>(keySql.release);
  const retireScope = db.prepare<[string]>(keySql.retireScope);
  const exists = db.prepare<[string], number>(keySql.exists).pluck();
  const sealable = db.prepare<[string, number], number>(keySql.sealable).pluck();
  const destroy = db.prepare<[string]>(keySql.destroy);
  const usable = db.prepare<[string, number], string>(keySql.usable).pluck();
  const dueScope = db.prepare<[number], KeyRow>(keySql.dueScope);
  const dueExpired = db.prepare<[number, number], KeyRow>(keySql.dueExpired);
  const dueUsed = db.prepare<[number], KeyRow>(keySql.dueUsed);
  const list = db.prepare<[string, number], KeyRow>(keySql.list);

  /**
   * Creation order without a counter row to write on every put (AUTOINCREMENT would): the clock in
   * milliseconds times 1000, and one more than the last one here when that is not larger, so keys
   * put by one store come in order and those of other processes by the millisecond.
   */
  let lastSeq = 0;
  const nextSeq = (): number => (lastSeq = Math.max(Date.now() * 1000, lastSeq + 1));

  /**
   * Throws DataKeyGoneError, before anything is written, when a key to destroy does not exist or
   * a required key may no longer be used.
   */
  const check = (changes: CheckedKeyChanges): void => {
    const gone = changes.destroy.filter((id) => exists.get(id) === undefined);
    if (changes.require.length > 0) {
      const now = Date.now();
      for (const id of changes.require) if (sealable.get(id, now) === undefined) gone.push(id);
    }
    if (gone.length > 0) throw new DataKeyGoneError(gone);
  };

  const releaseAll = (releases: readonly KeyUses[]): void => {
    for (const { id, uses } of releases) release.run(uses, id);
  };

  /** Applies the changes; to be run inside the append's savepoint, after check. */
  const apply = (changes: CheckedKeyChanges): void => {
    for (const key of changes.put) {
      try {
        insert.run(key.id, key.scope, key.subject, key.wrapped, key.uses, key.uses, key.expiresAt.getTime(), 0, nextSeq());
      } catch (error) {
        if (error instanceof Database.SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE') {
          throw new Error(`Data key ${key.id} already exists`, { cause: error });
        }
        throw error;
      }
    }
    releaseAll(changes.release);
    for (const scope of changes.retireScopes) retireScope.run(scope);
    for (const id of changes.destroy) destroy.run(id);
  };

  const vault: KeyVault = {
    async get(ids, now) {
      validKeyIds(ids, 'get');
      const at = epochMs(now, 'now');
      return options.guard(() => {
        const found = new Map<string, string>();
        for (const id of ids) {
          const wrapped = usable.get(id, at);
          if (wrapped !== undefined) found.set(id, wrapped);
        }
        return found;
      });
    },
    async release(releases) {
      const uses = releasedUses(releases, 'release');
      if (uses.length === 0) return;
      await options.groupCommit.enqueue(() => releaseAll(uses));
    },
    async due(now, limit) {
      const at = epochMs(now, 'now');
      validLimit(limit);
      if (limit === 0) return [];
      return options.guard(() => {
        // Each list is the oldest first and holds at most `limit`: their merge's first `limit` are the answer.
        const rows = new Map<string, KeyRow>();
        for (const row of [...dueScope.all(limit), ...dueExpired.all(at, limit), ...dueUsed.all(limit)]) rows.set(row.id, row);
        return [...rows.values()]
          .sort((a, b) => (a.created_seq! < b.created_seq! ? -1 : a.created_seq! > b.created_seq! ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, limit)
          .map((row) => ({
            id: row.id,
            scope: row.scope,
            subject: row.subject,
            because: retiredBecause({ scopeRetired: row.scope_retired !== 0n, expiresAtMs: Number(row.expires_at), usesLeft: Number(row.uses_left) }, at)!,
          }));
      });
    },
    async list(afterId, limit) {
      validLimit(limit);
      return options.guard(() => list.all(afterId ?? '', limit).map(toStoredKey));
    },
    async import(keys) {
      if (keys.length > MAX_KEY_CHANGES) throw new RangeError(`import takes at most ${MAX_KEY_CHANGES} keys, got ${keys.length}`);
      keys.forEach(validStoredKey);
      if (keys.length === 0) return;
      await options.groupCommit.enqueue(
        db.transaction(() => {
          for (const key of keys) {
            importOne.run(key.id, key.scope, key.subject, key.wrapped, key.uses, key.usesLeft, key.expiresAt.getTime(), key.scopeRetired ? 1 : 0, nextSeq());
          }
        }),
      );
    },
  };

  return { check, apply, vault, onDestroyed: options.onDestroyed };
};

const toStoredKey = (row: KeyRow): StoredDataKey => ({
  id: row.id,
  scope: row.scope,
  subject: row.subject,
  wrapped: row.wrapped,
  uses: Number(row.uses),
  usesLeft: Number(row.uses_left),
  expiresAt: new Date(Number(row.expires_at)),
  scopeRetired: row.scope_retired !== 0n,
});
