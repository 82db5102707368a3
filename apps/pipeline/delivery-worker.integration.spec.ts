import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultDeliveryPolicy } from '../../domain/delivery/policy.ts';
import type { Broker, ConsumeOptions, ConsumedRecord } from '../../infra/broker/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { MessengerConnector, OutboundDelivery } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { RelayMetrics } from '../boot/metrics.ts';
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

  it('hands a message whose record is twice in one batch to its messenger once, and records one outcome', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-delivery-worker-'));
    store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    let handler: ConsumeOptions['handler'] | undefined;
    const broker = { consume: async (options: ConsumeOptions) => ((handler = options.handler), { stop: async () => undefined }) } as unknown as Broker;
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
    await startDeliveryWorker({ store, broker, apps, connectors: new Map([['signal', connector]]), bodies, policy: defaultDeliveryPolicy, metrics, log: pino({ level: 'silent' }) });

    // A message of a Relay older than privacy at rest carries its body: no key to open.
    const value: OutboundRecord = { message: { messageId: 'm1', appId: 'app_1', messenger: 'signal', contactId: '+15550002', text: 'hello' }, attempt: 1 };
    const record = (offset: bigint): ConsumedRecord => ({ topic: 'outbound.signal', partition: 0, offset, key: 'app_1', value: JSON.stringify(value), headers: {}, id: 'm1', dueAt: undefined, timestamp: Date.now() });
    await handler!([record(0n), record(1n)]);
    await handler!([record(2n)]);

    expect(handed.map((d) => d.messageId)).toEqual(['m1']);
    const { events } = await store.readStream('outbound-m1');
    expect(events.map((event) => event.type)).toEqual(['MessageDelivered']);
  });
});
