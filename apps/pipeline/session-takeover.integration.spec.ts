import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultDeliveryPolicy } from '../../domain/delivery/policy.ts';
import { ALWAYS_HELD, type Broker, type ConsumeOptions, type ConsumedRecord } from '../../infra/broker/port.ts';
import { EventStoreUnavailableError, type EventStore } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { MemorySessionIdentityStore } from '../../infra/messenger/session/identity-store.ts';
import { SessionConnector } from '../../infra/messenger/session/session-connector.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { FakeSessionSwarm } from '../../test/support/fake-session-swarm.ts';
import { fakeSwarmStorage } from '../../test/support/fake-swarm-storage.ts';
import { SessionTestClient } from '../../test/support/session-test-client.ts';
import type { RelayMetrics } from '../services/metrics.ts';
import { startDeliveryWorker } from './delivery-worker.ts';
import type { OutboundRecord } from './queue-records.ts';
import type { BodyOpener } from './sealed-bodies.ts';

/**
 * Issue 48, what the contact sees: a Session message handed to the network by one instance whose
 * record of it never landed (it froze, crashed or lost its store right after) is handed again by
 * the instance that takes its records over. Both hand-offs carry the timestamp kept in the
 * message's history before the first, so the contact's app (the test client applies Session
 * Desktop's rule: a second message of one sender and timestamp is dropped) shows it once.
 */
describe('a Session message handed again by another instance', () => {
  let dir: string;
  let store: EventStore;
  let swarm: FakeSessionSwarm;
  const identities = new MemorySessionIdentityStore(); // the history both instances share
  const connectors: SessionConnector[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-session-takeover-'));
    store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 3, rateLimit: false });
  });
  afterAll(async () => {
    for (const connector of connectors) await connector.close();
    await store.close();
    await swarm.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** One instance: its own Session client (no memory of the other's) and delivery worker on the shared history. */
  const instance = async (address: () => string, options: { refuseOutcomes?: boolean } = {}) => {
    const connector = new SessionConnector({ storage: fakeSwarmStorage(swarm), identities, log: { info: () => undefined, warn: () => undefined, error: () => undefined } });
    connectors.push(connector);
    // A store that takes the kept timestamp but not the attempt's outcome (the instance is cut off right after the hand-off).
    const history: EventStore = Object.assign(Object.create(store) as EventStore, {
      appendToStream: (...args: Parameters<EventStore['appendToStream']>) =>
        options.refuseOutcomes && args[1].some((event) => event.type !== 'DeliveryTimestamped')
          ? Promise.reject(new EventStoreUnavailableError('PostgreSQL event store failure: Connection terminated unexpectedly'))
          : store.appendToStream(...args),
    });
    let handler: ConsumeOptions['handler'] | undefined;
    const broker = { consume: async (consume: ConsumeOptions) => ((handler = consume.handler), { stop: async () => undefined }) } as unknown as Broker;
    const appMessenger = () => ({ id: 'am_1', appId: 'app_1', messenger: 'session', status: 'active', address: address(), health: 'ok', healthReason: null });
    const apps = {
      app: () => ({ id: 'app_1', userId: 'u', settings: { status: 'active', name: 'Support bot' }, createdAt: '', messengers: [appMessenger()] }),
      appMessengerOf: appMessenger,
    } as unknown as AppsProjection;
    const counter = { inc: () => undefined };
    const metrics = { messagesDelivered: counter, messagesFailed: counter, messagesAbandoned: counter } as unknown as RelayMetrics;
    const bodies = { keysOf: async () => new Map() } as unknown as BodyOpener;
    await startDeliveryWorker({ store: history, broker, apps, connectors: new Map([['session', connector]]), bodies, policy: defaultDeliveryPolicy, metrics, log: pino({ level: 'silent' }) });
    return { connector, handler: handler! };
  };

  it('carries the first hand-off’s timestamp, so the contact sees the message once', async () => {
    let bot = '';
    const first = await instance(() => bot, { refuseOutcomes: true });
    bot = await first.connector.provision('am_1');
    const contact = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
    // A message of a Relay older than privacy at rest carries its body: no data key to open.
    const value: OutboundRecord = { message: { messageId: 'm1', appId: 'app_1', messenger: 'session', contactId: contact.sessionId, text: 'seen once' }, attempt: 1 };
    const record: ConsumedRecord = { topic: 'outbound.session', partition: 0, offset: 0n, key: 'app_1', value: JSON.stringify(value), headers: {}, id: 'm1', dueAt: undefined, timestamp: Date.now() };

    await expect(first.handler([record], ALWAYS_HELD)).rejects.toThrow(EventStoreUnavailableError);
    const [shown] = await contact.waitForMessages(1);
    const kept = (await store.readStream('outbound-m1')).events;
    expect(kept.map((event) => [event.type, (event.data as { timestamp?: number }).timestamp])).toEqual([['DeliveryTimestamped', shown!.envelopeTimestamp]]);

    // The member that takes the partition over: another process, its send clock ahead of the stamp.
    const second = await instance(() => bot);
    await second.connector.deliver({ messageId: 'other', from: bot, contactId: contact.sessionId, text: 'a later message' });
    await second.handler([record], ALWAYS_HELD);

    expect((await store.readStream('outbound-m1')).events.map((event) => event.type)).toEqual(['DeliveryTimestamped', 'MessageDelivered']);
    const later = await contact.waitForMessages(1);
    expect(later.map((message) => message.text)).toEqual(['a later message']);
    // The second hand-off reached the network (another storage hash: Session's encryption is randomised) and was dropped as a repeat.
    await expect.poll(() => contact.duplicates.map((message) => [message.text, message.envelopeTimestamp]), { timeout: 5_000 }).toEqual([['seen once', shown!.envelopeTimestamp]]);
    expect(await contact.receive()).toEqual([]);
  });
});
