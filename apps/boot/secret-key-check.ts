import { createKeyedHash } from '../../infra/crypto/keyed-hash.ts';
import { existingSecretKey, generateSecretKeyFile } from '../../infra/crypto/secret-key-file.ts';
import { ExpectedVersionConflictError, type EventStore } from '../../infra/event-store/port.ts';
import { ConfigError } from '../services/config.ts';

/** The stream that says which secret key the history's secrets and message keys are sealed with. */
export const SECRET_KEY_STREAM = 'relay-secretkey';
/** Data: `{ fingerprint }`, a keyed hash of a constant under the key: it tells nothing of the key. */
export const SECRET_KEY_IN_USE = 'SecretKeyInUse';

/** 32 hex characters that tell two keys apart and nothing else. */
export const secretKeyFingerprint = (secretKeyHex: string): string => createKeyedHash(secretKeyHex).ref('secret-key-check', 'relay');

const sameKeyNeeded = 'every Relay instance on one event store needs the same RELAY_SECRET_KEY';

/**
 * This process's secret key (RELAY_SECRET_KEY, or DATA_DIR/secret.key), checked against the one the
 * event store's history is sealed with (docs/durability.md). The first process on a store records
 * its key's fingerprint there; a process with another key, or with none while the store has one,
 * stops at start-up with one line naming RELAY_SECRET_KEY, instead of running with a key that cannot
 * open what the others sealed (its polls and deliveries would fail, and what it sealed no other
 * instance could open). A key is generated into DATA_DIR only for a store that has none yet.
 */
export const checkedSecretKey = async (store: EventStore, configured: string | undefined, dataDir: string): Promise<string> => {
  const recorded = async () => {
    const { events } = await store.readStream(SECRET_KEY_STREAM);
    return (events.at(-1)?.data as { fingerprint?: unknown } | undefined)?.fingerprint;
  };
  const check = (key: string | undefined, fingerprint: unknown): string => {
    if (key === undefined)
      throw new ConfigError(
        `Invalid configuration RELAY_SECRET_KEY: this event store is sealed with a secret key this instance does not have (fingerprint ${String(fingerprint).slice(0, 8)}…): set it, or copy secret.key from the DATA_DIR of the instance that made it; ${sameKeyNeeded}`,
      );
    if (secretKeyFingerprint(key) !== fingerprint)
      throw new ConfigError(
        `Invalid configuration RELAY_SECRET_KEY: not the key this event store is sealed with (fingerprint ${String(fingerprint).slice(0, 8)}…, this key's ${secretKeyFingerprint(key).slice(0, 8)}…); ${sameKeyNeeded}`,
      );
    return key;
  };
  const existing = existingSecretKey(configured, dataDir);
  const fingerprint = await recorded();
  if (fingerprint !== undefined) return check(existing, fingerprint);
  const key = existing ?? generateSecretKeyFile(dataDir);
  try {
    await store.appendToStream(SECRET_KEY_STREAM, [{ type: SECRET_KEY_IN_USE, data: { fingerprint: secretKeyFingerprint(key) }, metadata: { actor: 'system:start' } }], {
      expectedVersion: 0n,
    });
    return key;
  } catch (error) {
    if (!(error instanceof ExpectedVersionConflictError)) throw error;
    return check(key, await recorded()); // another instance recorded its key first
  }
};
