import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { ConfigError } from '../services/config.ts';
import { checkedSecretKey, SECRET_KEY_IN_USE, SECRET_KEY_STREAM, secretKeyFingerprint } from './secret-key-check.ts';

describe('the secret key checked against the event store', () => {
  const dirs: string[] = [];
  let store: EventStore | undefined;
  const dir = () => {
    const made = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-secret-key-'));
    dirs.push(made);
    return made;
  };
  afterEach(async () => {
    await store?.close();
    for (const made of dirs.splice(0)) fs.rmSync(made, { recursive: true, force: true });
  });

  it('is generated and recorded by the first process; another process must bring the same key', async () => {
    const first = dir();
    store = createSqliteEventStore({ path: path.join(first, 'events.db'), synchronous: 'normal' });
    const key = await checkedSecretKey(store, undefined, first);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.readFileSync(path.join(first, 'secret.key'), 'utf8').trim()).toBe(key);
    const { events } = await store.readStream(SECRET_KEY_STREAM);
    expect(events.map((event) => [event.type, event.data])).toEqual([[SECRET_KEY_IN_USE, { fingerprint: secretKeyFingerprint(key) }]]);

    // A restart finds its key again and writes nothing.
    expect(await checkedSecretKey(store, undefined, first)).toBe(key);
    expect(await checkedSecretKey(store, key.toUpperCase(), dir())).toBe(key);
    expect((await store.readStream(SECRET_KEY_STREAM)).version).toBe(1n);

    // Another DATA_DIR without the key: refused, and no key is generated there.
    const second = dir();
    await expect(checkedSecretKey(store, undefined, second)).rejects.toThrow(ConfigError);
    await expect(checkedSecretKey(store, undefined, second)).rejects.toThrow(/^Invalid configuration RELAY_SECRET_KEY: this event store is sealed with a secret key this instance does not have/);
    expect(fs.existsSync(path.join(second, 'secret.key'))).toBe(false);
    const other = randomBytes(32).toString('hex');
    const refusal = await checkedSecretKey(store, other, second).catch((error: Error) => error.message);
    expect(refusal).toMatch(/^Invalid configuration RELAY_SECRET_KEY: not the key this event store is sealed with/);
    expect(refusal).not.toContain(other);
    expect(refusal).not.toContain(key);
  });

  it('is recorded for a history written before the check, with the key it was written with', async () => {
    const data = dir();
    store = createSqliteEventStore({ path: path.join(data, 'events.db'), synchronous: 'normal' });
    await store.appendToStream('app-a1', [{ type: 'AppCreated', data: {} }]);
    const key = randomBytes(32).toString('hex');
    expect(await checkedSecretKey(store, key, data)).toBe(key);
    expect(fs.existsSync(path.join(data, 'secret.key'))).toBe(false);
    expect((await store.readStream(SECRET_KEY_STREAM)).events[0]!.data).toEqual({ fingerprint: secretKeyFingerprint(key) });
  });
});
