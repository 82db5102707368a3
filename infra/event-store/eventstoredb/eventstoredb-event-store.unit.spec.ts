import { describe, expect, it } from 'vitest';
import { NoKeyVaultError, type StandaloneKeyVault } from '../data-keys.ts';
import { DataKeyGoneError, EventStoreUnavailableError, type EventStore, type KeyChanges, type NewDataKey } from '../port.ts';
import { createEventStoreDbEventStore } from './eventstoredb-event-store.ts';

/**
 * What the adapter does without a server: a closed loopback port (nothing listens on port 1), so
 * every call fails fast with a refused connection. The contract suite on a real server is
 * eventstoredb-event-store.contract.spec.ts.
 */
const unreachable = 'esdb://127.0.0.1:1?tls=false';
const event = { type: 'T', data: { n: 1 } };

const uses = (store: EventStore): [string, () => Promise<unknown>][] => [
  ['ping', () => store.ping()],
  ['readStream', () => store.readStream('a-1')],
  ['appendToStream', () => store.appendToStream('a-1', [event])],
  ['appendToStream (no events)', () => store.appendToStream('a-1', [], { expectedVersion: 0n })],
  ['readAll', () => store.readAll()],
  ['headPosition', () => store.headPosition()],
  ['readCheckpoint', () => store.readCheckpoint('x')],
  ['storeCheckpoint', () => store.storeCheckpoint('x', 1n)],
  ['listCheckpoints', () => store.listCheckpoints()],
];

describe('EventStoreDB event store without a server', () => {
  it('is of kind eventstoredb and refuses a bad namespace', async () => {
    const store = createEventStoreDbEventStore({ connectionString: unreachable, namespace: 'relay_' });
    expect(store.kind).toBe('eventstoredb');
    await store.close();
    expect(() => createEventStoreDbEventStore({ connectionString: unreachable, namespace: 'relay' })).toThrow(RangeError);
  });

  it('maps an unreachable server to EventStoreUnavailableError, without crashing', async () => {
    const store = createEventStoreDbEventStore({ connectionString: unreachable, namespace: 't1_' });
    try {
      for (const [name, use] of uses(store)) {
        const error = await use().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, name).toBeInstanceOf(EventStoreUnavailableError);
      }
      const subscription = store.subscribe({ after: 0n, handler: () => undefined });
      await expect(subscription.catchUp()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await subscription.stop();
    } finally {
      await store.close();
    }
  });

  it('rejects bad input with RangeError before any I/O', async () => {
    const store = createEventStoreDbEventStore({ connectionString: unreachable });
    try {
      const bad: (() => Promise<unknown>)[] = [
        () => store.appendToStream('a-1', [{ ...event, recordedAt: new Date(Number.NaN) }]),
        () => store.appendToStream('a-1', [{ ...event, id: 'not-a-uuid' }]),
        () => store.appendToStream('a-1', [{ type: '$system', data: {} }]),
        () => store.appendToStream('a-1', [{ ...event, metadata: { '$relay.recordedAt': 'x' } }]),
        () => store.appendToStream('a-1', [event], { expectedVersion: -1n }),
        () => store.appendToStream('@relay-origin', [event]),
        () => store.appendToStream('$ce-a', [event]),
        () => store.readStream(''),
        () => store.readAll({ limit: -1 }),
        () => store.readAll({ after: -1n }),
        () => store.readAll({ filter: { since: new Date(Number.NaN) } }),
        () => store.storeCheckpoint('x', -1n),
        () => store.storeCheckpoint('', 1n),
      ];
      for (const use of bad) await expect(use()).rejects.toBeInstanceOf(RangeError);
      expect(() => store.subscribe({ after: 0n, batchSize: 0, handler: () => undefined })).toThrow(RangeError);
    } finally {
      await store.close();
    }
  });

  it('after close, every use fails with EventStoreUnavailableError and subscriptions stop', async () => {
    const store = createEventStoreDbEventStore({ connectionString: unreachable });
    const subscription = store.subscribe({ after: 0n, handler: () => undefined });
    await store.close();
    await store.close();
    for (const [name, use] of uses(store)) {
      const error = await use().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(EventStoreUnavailableError);
    }
    expect(() => store.subscribe({ after: 0n, handler: () => undefined })).toThrow(EventStoreUnavailableError);
    await expect(subscription.catchUp()).rejects.toBeInstanceOf(Error);
  });

  it('without a vault, refuses data keys with NoKeyVaultError before any I/O', async () => {
    const store = createEventStoreDbEventStore({ connectionString: unreachable });
    try {
      await expect(store.keys.get(['k1'], new Date())).rejects.toBeInstanceOf(NoKeyVaultError);
      await expect(store.keys.due(new Date(), 1)).rejects.toBeInstanceOf(NoKeyVaultError);
      await expect(store.keys.list(undefined, 1)).rejects.toThrow(/open it with a key vault \(option `vault`/);
      await expect(store.appendToStream('a-1', [event], { keys: { release: ['k1'] } })).rejects.toBeInstanceOf(NoKeyVaultError);
    } finally {
      await store.close();
    }
  });

  it('with a vault: checks the keys to destroy, puts new keys and checks required ones before the append, the rest only after it', async () => {
    const key: NewDataKey = { id: 'k1', scope: 's', subject: 'x', wrapped: 'w', uses: 1, expiresAt: new Date('2030-01-01T00:00:00.000Z') };
    const calls: string[] = [];
    const vault: StandaloneKeyVault = {
      get: async () => new Map(),
      release: async () => undefined,
      due: async () => [],
      list: async () => [],
      import: async () => undefined,
      missing: async (ids) => {
        calls.push(`missing ${ids.join(',')}`);
        return ids.filter((id) => id.startsWith('gone'));
      },
      apply: async (changes: KeyChanges) => void calls.push(`apply ${JSON.stringify(changes)}`),
      close: async () => undefined,
    };
    const store = createEventStoreDbEventStore({ connectionString: unreachable, vault });
    try {
      // A key to destroy is gone: nothing is put, nothing appended.
      const gone = await store.appendToStream('a-1', [event], { keys: { put: [key], destroy: ['k0', 'gone-1'] } }).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(DataKeyGoneError);
      expect((gone as DataKeyGoneError).keyIds).toEqual(['gone-1']);
      expect(calls).toEqual(['missing k0,gone-1']);
      // The append fails (no server): the key was put and k2 checked before it, the release is never applied.
      calls.length = 0;
      await expect(store.appendToStream('a-1', [event], { keys: { put: [key], require: ['k2'], release: ['k0'] } })).rejects.toBeInstanceOf(EventStoreUnavailableError);
      expect(calls).toEqual([`apply ${JSON.stringify({ put: [key], require: ['k2'] })}`]);
      expect(await store.keys.due(new Date(), 1)).toEqual([]);
    } finally {
      await store.close();
    }
    await expect(store.keys.get(['k1'], new Date())).rejects.toBeInstanceOf(EventStoreUnavailableError);
  });
});
