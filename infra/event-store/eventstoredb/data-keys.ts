import { NoKeyVaultError, type CheckedKeyChanges, type StandaloneKeyVault } from '../data-keys.ts';
import { DataKeyGoneError, type KeyVault } from '../port.ts';

const NO_VAULT =
  'The EventStoreDB event store keeps no data keys by itself: open it with a key vault (option `vault`, e.g. createPostgresKeyVault)';

/**
 * Data keys beside an EventStoreDB history. ESDB has no multi-stream transactions and no tables,
 * so the keys live in a vault of their own (`vault`: the PostgreSQL one), changed around the
 * append, which makes the pair NOT atomic (docs/eventstoredb.md):
 * - before the append: the keys to destroy must exist (else DataKeyGoneError, nothing appended),
 *   the keys to put are written and the required ones checked (one that may no longer be used
 *   fails there, with nothing appended);
 * - after it: releases, retired scopes and destructions.
 * A failure between the two leaves the keys put without their event (they expire and are
 * destroyed like any other), or the event appended without its later changes: retrying the same
 * append (same event ids, which ESDB takes as the same write) applies them.
 */
export const createEsdbKeys = (vault: StandaloneKeyVault | undefined) => {
  const required = (): StandaloneKeyVault => {
    if (vault === undefined) throw new NoKeyVaultError(NO_VAULT);
    return vault;
  };
  const refuse = async (): Promise<never> => {
    throw new NoKeyVaultError(NO_VAULT);
  };
  const keys: KeyVault =
    vault === undefined
      ? { get: refuse, release: refuse, due: refuse, list: refuse, import: refuse }
      : { get: (ids, now) => vault.get(ids, now), release: (ids) => vault.release(ids), due: (now, limit) => vault.due(now, limit), list: (afterId, limit) => vault.list(afterId, limit), import: (stored) => vault.import(stored) };

  return {
    keys,
    /** Throws NoKeyVaultError (before any I/O) when changes are asked for and there is no vault. */
    require(changes: CheckedKeyChanges | undefined): void {
      if (changes !== undefined) required();
    },
    async beforeAppend(changes: CheckedKeyChanges | undefined): Promise<void> {
      if (changes === undefined) return;
      const store = required();
      if (changes.destroy.length > 0) {
        const missing = await store.missing(changes.destroy);
        if (missing.length > 0) throw new DataKeyGoneError(missing);
      }
      if (changes.put.length + changes.require.length > 0) await store.apply({ put: changes.put, require: changes.require });
    },
    async afterAppend(changes: CheckedKeyChanges | undefined): Promise<void> {
      if (changes === undefined) return;
      const rest = { release: changes.release, retireScopes: changes.retireScopes, destroy: changes.destroy };
      if (rest.release.length + rest.retireScopes.length + rest.destroy.length > 0) await required().apply(rest);
    },
  };
};
