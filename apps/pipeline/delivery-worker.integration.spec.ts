import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultDeliveryPolicy } from '../../domain/delivery/policy.ts';
import { ALWAYS_HELD, RecordsNoLongerHeldError, type Broker, type ConsumeOptions, type ConsumedRecord } from '../../infra/broker/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { EventStoreUnavailableError, type EventStore } from '../../infra/event-store/port.ts';
import type { MessengerConnector, OutboundDelivery } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { RelayMetrics } from '../services/metrics.ts';
import { startDeliveryWorker } from './delivery-worker.ts';
import type { OutboundRecord } from './queue-records.ts';
import type { BodyOpener } from './sealed-bodies.ts';

/**
 * The delivery worker on a real event store, handed batches directly: a message whose record came
 * twice (two publishers, or one re-publishing after a crash) reaches the messenger once.
 */
describe('the delivery worker', () => {
  let dir: string;
  let store: EventStore | undefined;
  afterEach(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A worker on a real store whose broker hands batches when the test says, with one connector that records its hand-offs. */
  const worker = async (options: { failAppends?: number } = {}) => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-delivery-worker-'));
    store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    // A store that refuses the next appends (cut off, full) after the messenger took the message.
    let failing = options.failAppends ?? 0;
    const real = store;
    const flaky: EventStore = Object.assign(Object.create(real) as EventStore, {
      appendToStream: (...args: Parameters<EventStore['appendToStream']>) =>
        failing-- > 0 ? Promise.reject(new EventStoreUnavailableError('PostgreSQL event store failure: timeout exceeded when trying to connect')) : real.appendToStream(...args),
      readStream: (...args: Parameters<EventStore['readStream']>) => real.readStream(...args),
    });
    let handler: ConsumeOptions['handler'] | undefined;
    let onError: ConsumeOptions['onError'];
    const broker = { consume: async (options: ConsumeOptions) => ((handler = options.handler), (onError = options.onError), { stop: async () => undefined }) } as unknown as Broker;
    const handed: OutboundDelivery[] = [];
    const connector = {
      messenger: 'signal',
      deliver: async (delivery: OutboundDelivery) => {
        handed.push(delivery);
        await new Promise((resolve) => setTimeout(resolve, 20)); // a daemon's round trip: copies would overlap
        return { ok: true };
      },
    } as unknown as MessengerConnector;
    const appMessenger = { id: 'am_1', appId: 'app_1', messenger: 'signal', status: 'active', address: '+15550001', health: 'ok', healthReason: null };
    const apps = {
      app: () => ({ id: 'app_1', userId: 'u', settings: { status: 'active' }, createdAt: '', messengers: [appMessenger] }),
      appMessengerOf: () => appMessenger,
    } as unknown as AppsProjection;
    const counter = { inc: () => undefined };
    const metrics = { messagesDelivered: counter, messagesFailed: counter, messagesAbandoned: counter } as unknown as RelayMetrics;
    const bodies = { keysOf: async () => new Map(), open: async () => 'forgotten', remember: () => undefined } as unknown as BodyOpener;
    const warned: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warned.push(line) });
    await startDeliveryWorker({ store: flaky, broker, apps, connectors: new Map([['signal', connector]]), bodies, policy: defaultDeliveryPolicy, metrics, log });
    return { handler: handler!, onError: onError!, handed, warned };
  };

  // A message of a Relay older than privacy at rest carries its body: no key to open.
  const record = (offset: bigint, messageId = 'm1'): ConsumedRecord => {
    const value: OutboundRecord = { message: { messageId, appId: 'app_1', messenger: 'signal', contactId: '+15550002', text: 'hello' }, attempt: 1 };
    return { topic: 'outbound.signal', partition: 0, offset, key: 'app_1', value: JSON.stringify(value), headers: {}, id: messageId, dueAt: undefined, timestamp: Date.now() };
  };

  it('hands a message whose record is twice in one batch to its messenger once, and records one outcome', async () => {
    const { handler, handed } = await worker();
    await handler([record(0n), record(1n)], ALWAYS_HELD);
    await handler([record(2n)], ALWAYS_HELD);

    expect(handed.map((d) => d.messageId)).toEqual(['m1']);
    const { events } = await store!.readStream('outbound-m1');
    expect(events.map((event) => event.type)).toEqual(['MessageDelivered']);
  });

  it('records the outcome of an attempt whose record the store refused when the record comes again, without handing the message a second time', async () => {
    const { handler, handed } = await worker({ failAppends: 1 });
    const failure = await handler([record(0n)], ALWAYS_HELD).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(EventStoreUnavailableError);
    expect(handed.map((d) => d.messageId)).toEqual(['m1']);
    expect((await store!.readStream('outbound-m1')).events).toEqual([]);

    await handler([record(0n)], ALWAYS_HELD); // the same batch, handed again
    expect(handed.map((d) => d.messageId)).toEqual(['m1']);
    expect((await store!.readStream('outbound-m1')).events.map((event) => event.type)).toEqual(['MessageDelivered']);
  });

  it('hands nothing of a batch whose hold is lost (a process frozen past its session), and records nothing for it', async () => {
    const { handler, onError, handed, warned } = await worker();
    let confirms = 0;
    const lost = { confirm: () => (confirms++, Promise.reject(new RecordsNoLongerHeldError('The records of outbound.signal[0] may be another member\'s now'))), stillHeld: () => false };
    const failure = await handler([record(0n, 'm1'), record(1n, 'm2')], lost).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(RecordsNoLongerHeldError);
    expect(confirms).toBe(2); // asked right before each hand-off
    expect(handed).toEqual([]);
    for (const id of ['m1', 'm2']) expect((await store!.readStream(`outbound-${id}`)).events).toEqual([]);
    onError?.(failure);
    expect(warned.join('')).toContain('delivery batch given back: this instance no longer holds its records');

    // Handed again to a member that holds it: delivered once.
    await handler([record(0n, 'm1'), record(1n, 'm2')], ALWAYS_HELD);
    expect(handed.map((d) => d.messageId).sort()).toEqual(['m1', 'm2']);
  });
});
