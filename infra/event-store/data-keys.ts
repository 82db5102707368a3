/**
 * Data keys (crypto-shredding) as every store handles them: the checks of what a caller asks for,
 * and the vault that works on its own, outside an event store's transaction (EventStoreDB's).
 */
import type { DueKey, KeyChanges, KeyRelease, KeyVault, NewDataKey, RetiredBecause, StoredDataKey } from './port.ts';

/** At most this many entries in one list of a KeyChanges, and ids per `get`/`release`. */
export const MAX_KEY_CHANGES = 10_000;
/** Longest id, scope and subject; longest wrapped key material. */
export const MAX_KEY_FIELD_LENGTH = 512;
export const MAX_WRAPPED_LENGTH = 16_384;
/** Most keys per `list`/`due` page. */
export const MAX_KEY_PAGE = 10_000;

/**
 * A vault that applies key changes by itself (its own transaction), for an event store that cannot
 * write them with its events (EventStoreDB). `createPostgresKeyVault` is one.
 */
export interface StandaloneKeyVault extends KeyVault {
  /**
   * Applies the changes in one transaction: put, release, retireScopes, then destroy. A destroy of
   * a key that does not exist throws DataKeyGoneError and applies nothing.
   */
  apply(changes: KeyChanges): Promise<void>;
  /** Of `ids`, those that do not exist (in the order given). */
  missing(ids: readonly string[]): Promise<string[]>;
  close(): Promise<void>;
}

/** The store has no vault to keep data keys in (EventStoreDB opened without `vault`). */
export class NoKeyVaultError extends Error {
  override readonly name = 'NoKeyVaultError';
}

const text = (value: unknown, name: string, max = MAX_KEY_FIELD_LENGTH): string => {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new RangeError(`${name} must be a string of 1 to ${max} characters, got ${typeof value === 'string' ? `${value.length} characters` : typeof value}`);
  }
  return value;
};

const ids = (list: readonly string[] | undefined, name: string): readonly string[] => {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new RangeError(`keys.${name} must be an array of ids`);
  if (list.length > MAX_KEY_CHANGES) throw new RangeError(`keys.${name} has ${list.length} entries: at most ${MAX_KEY_CHANGES}`);
  for (const id of list) text(id, `keys.${name}[]`);
  return list;
};

export const validKeyIds = (list: readonly string[], name: string): readonly string[] => ids(list, name);

export const validNewKey = (key: NewDataKey): NewDataKey => {
  text(key?.id, 'key id');
  text(key.scope, `key ${key.id}: scope`);
  text(key.subject, `key ${key.id}: subject`);
  text(key.wrapped, `key ${key.id}: wrapped`, MAX_WRAPPED_LENGTH);
  if (!Number.isSafeInteger(key.uses) || key.uses < 1 || key.uses > 2 ** 31 - 1) throw new RangeError(`key ${key.id}: uses must be an integer from 1 to 2^31-1, got ${key.uses}`);
  if (!(key.expiresAt instanceof Date) || Number.isNaN(key.expiresAt.getTime())) throw new RangeError(`key ${key.id}: expiresAt is an invalid Date`);
  return key;
};

export const validStoredKey = (key: StoredDataKey): StoredDataKey => {
  validNewKey(key);
  if (!Number.isSafeInteger(key.usesLeft) || key.usesLeft < 0 || key.usesLeft > key.uses) throw new RangeError(`key ${key.id}: usesLeft must be an integer from 0 to uses, got ${key.usesLeft}`);
  if (typeof key.scopeRetired !== 'boolean') throw new RangeError(`key ${key.id}: scopeRetired must be a boolean`);
  return key;
};

/** Uses released from one key. */
export interface KeyUses {
  readonly id: string;
  readonly uses: number;
}

/** Checked changes with every list present, or undefined when there is nothing to change. */
export interface CheckedKeyChanges {
  readonly put: readonly NewDataKey[];
  /** Each id once. */
  readonly require: readonly string[];
  /** Each key once, with the uses released from it. */
  readonly release: readonly KeyUses[];
  readonly retireScopes: readonly string[];
  readonly destroy: readonly string[];
}

const MAX_USES = 2 ** 31 - 1;

/** A release list with each key once, its uses summed; RangeError for an entry that is neither an id nor `{ id, uses }` with 1 to 2^31-1 uses. */
export const releasedUses = (releases: readonly KeyRelease[] | undefined, name = 'keys.release'): KeyUses[] => {
  if (releases === undefined) return [];
  if (!Array.isArray(releases)) throw new RangeError(`${name} must be an array of ids or { id, uses }`);
  if (releases.length > MAX_KEY_CHANGES) throw new RangeError(`${name} has ${releases.length} entries: at most ${MAX_KEY_CHANGES}`);
  const counts = new Map<string, number>();
  for (const release of releases) {
    const [id, uses] = typeof release === 'string' ? [release, 1] : [release?.id, release?.uses];
    text(id, `${name}[]`);
    if (!Number.isSafeInteger(uses) || uses! < 1 || uses! > MAX_USES) throw new RangeError(`${name}: uses must be an integer from 1 to 2^31-1, got ${uses}`);
    counts.set(id!, Math.min((counts.get(id!) ?? 0) + uses!, MAX_USES));
  }
  return [...counts].map(([id, uses]) => ({ id, uses }));
};

export const checkKeyChanges = (changes: KeyChanges | undefined): CheckedKeyChanges | undefined => {
  if (changes === undefined) return undefined;
  const put = changes.put ?? [];
  if (!Array.isArray(put)) throw new RangeError('keys.put must be an array of keys');
  if (put.length > MAX_KEY_CHANGES) throw new RangeError(`keys.put has ${put.length} entries: at most ${MAX_KEY_CHANGES}`);
  put.forEach(validNewKey);
  if (new Set(put.map((key) => key.id)).size !== put.length) throw new RangeError('keys.put names a key id twice');
  const checked = {
    put,
    require: [...new Set(ids(changes.require, 'require'))],
    release: releasedUses(changes.release),
    retireScopes: ids(changes.retireScopes, 'retireScopes'),
    destroy: [...new Set(ids(changes.destroy, 'destroy'))],
  };
  const empty = checked.put.length + checked.require.length + checked.release.length + checked.retireScopes.length + checked.destroy.length === 0;
  return empty ? undefined : checked;
};

export const validLimit = (limit: number, name = 'limit'): number => {
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > MAX_KEY_PAGE) throw new RangeError(`${name} must be an integer from 0 to ${MAX_KEY_PAGE}, got ${limit}`);
  return limit;
};

/** Why a key is retired at `now` (scope before expired before used), or undefined while it is not. */
export const retiredBecause = (key: { scopeRetired: boolean; expiresAtMs: number; usesLeft: number }, nowMs: number): RetiredBecause | undefined => {
  if (key.scopeRetired) return 'scope';
  if (key.expiresAtMs <= nowMs) return 'expired';
  if (key.usesLeft <= 0) return 'used';
  return undefined;
};

/** `vault` whose every method first runs `check` (which throws once the store is closed). */
export const checkedVault = (vault: KeyVault, check: () => void): KeyVault => ({
  get: async (ids, now) => (check(), vault.get(ids, now)),
  release: async (releases) => (check(), vault.release(releases)),
  due: async (now, limit) => (check(), vault.due(now, limit)),
  list: async (afterId, limit) => (check(), vault.list(afterId, limit)),
  import: async (keys) => (check(), vault.import(keys)),
});

export type { DueKey };
