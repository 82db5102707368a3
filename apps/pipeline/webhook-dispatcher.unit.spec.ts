/**
 * The webhook dispatcher's rounds: it forgets a failure once the message that failed has left the
 * queue by other means (its retention passed, the queue was emptied), so that the app's empty queue
 * is not popped again at every round; and after a start it looks at every webhook app's queue at
 * once, not a few per tick.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { inboundDecider, inboundStreamName } from '../../domain/inbound/decider.ts';
import { inboundBinding, type InboundEvent } from '../../domain/inbound/events.ts';
import { bodyStrings } from '../../domain/shared/message-body.ts';
import type { ConsumedRecord, PopOptions } from '../../infra/broker/port.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { topics } from '../services/topology.ts';
import { startWebhookDispatcher } from './webhook-dispatcher.ts';

const secrets = createSecretBox('33'.repeat(32));
const sealer = createMessageSealer(secrets);
const settings = { timeoutMs: 2000, maxAttempts: 5, baseDelayMs: 10, maxDelayMs: 20, idlePollMs: 10, allowLocal: true };

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A broker of queues in memory: a pop hands its records to `accept` first and takes them only if it
 * resolves; pops (and empty ones) are counted. Like the embedded broker, it knows a queue is empty
 * once a pop found it so, until a record is added.
 */
const memoryBroker = () => {
  const queues = new Map<string, ConsumedRecord[]>();
  const knownEmpty = new Set<string>();
  const pops = new Map<string, { all: number; empty: number }>();
  const looks = new Map<string, number>();
  let offset = 0n;
  return {
    add(topic: string, value: unknown) {
      const list = queues.get(topic) ?? [];
      const id = `r${offset}`;
      list.push({ topic, partition: 0, offset: offset++, key: topic, value: JSON.stringify(value), headers: {}, id, dueAt: undefined, timestamp: 0 });
      queues.set(topic, list);
      knownEmpty.delete(topic);
    },
    /** Empties a queue directly, as its retention passing would. */
    empty: (topic: string) => void queues.set(topic, []),
    pops: (topic: string) => pops.get(topic) ?? { all: 0, empty: 0 },
    async pop(topic: string, max: number, options?: PopOptions) {
      const count = pops.get(topic) ?? { all: 0, empty: 0 };
      pops.set(topic, count);
      count.all++;
      const list = queues.get(topic) ?? [];
      const taken = list.slice(0, max);
      if (taken.length === 0) (count.empty++, knownEmpty.add(topic));
      else await options?.accept?.(taken);
      list.splice(0, taken.length);
      return taken;
    },
    knownEmpty: (topic: string) => {
      looks.set(topic, (looks.get(topic) ?? 0) + 1);
      return knownEmpty.has(topic);
    },
    /** How often `knownEmpty` was asked about the topic. */
    looks: (topic: string) => looks.get(topic) ?? 0,
  };
};

/** The memory broker, telling arrivals as Kafka's does (Broker.watchArrivals): `arrive` adds a record as another process would and tells it. */
const arrivingBroker = () => {
  const broker = memoryBroker();
  const listeners = new Set<(topic: string) => void>();
  return Object.assign(broker, {
    watchArrivals: (listener: (topic: string) => void) => (listeners.add(listener), () => void listeners.delete(listener)),
    arrive(topic: string, value: unknown) {
      broker.add(topic, value);
      for (const listener of listeners) listener(topic);
    },
  });
};

/** A receiver that answers 500 to the first `failures` requests and 204 after, keeping the message ids it took. */
const receiverFailing = async (failures: number) => {
  let requests = 0;
  const taken: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (++requests <= failures) return void res.writeHead(500).end('no');
      taken.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messageId: string }).messageId);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, requests: () => requests, taken: () => [...taken] };
};

const openStore = (): EventStore => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-webhooks-'));
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal', pollIntervalMs: 5 });
  cleanups.push(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return store;
};

/** A receiver that answers 500 to every request, counting them. */
const failingReceiver = async () => {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.writeHead(500).end('no'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, requests: () => requests };
};

/** The apps delivered by webhook to `url`, as the apps read model knows them. */
const webhookApps = (appIds: readonly string[], url: string) => {
  const apps = new AppsProjection();
  appIds.forEach((appId, i) => apps.apply({ type: 'AppCreated', data: appCreated(appId, url), streamName: `app-${appId}`, globalPosition: BigInt(i + 1) } as unknown as RecordedEvent));
  return apps;
};
const appCreated = (appId: string, url: string) => ({
    appId,
    userId: 'u1',
    createdAt: '2026-11-29T00:00:00.000Z',
    name: appId,
    protocol: ['signal'],
    status: 'active',
    deliveryType: 'webhook',
    webhookUrl: url,
    webhookAuthType: 'bearer',
    webhookAuthSecretEncrypted: secrets.encrypt('receiver-secret'),
    webhookAuthHeaderName: null,
    apiKeyId: null,
    webhookSigningSecretEncrypted: secrets.encrypt(`whsec_${randomBytes(32).toString('base64')}`),
});

/** Records the message received (its stream, its data key in the store's vault) and returns its queue record. */
const receive = async (store: EventStore, appId: string, messageId: string, text: string) => {
  const key = sealer.newKey();
  const data = { messageId, appId, appMessengerId: 'am1', messenger: 'signal' as const, content: text, keyId: key.id, now: new Date() };
  const put = { id: key.id, scope: appId, subject: inboundStreamName(messageId), wrapped: key.wrapped, uses: 1, expiresAt: new Date(Date.now() + 3_600_000) };
  const sealed = sealer.seal(key.raw, inboundBinding(messageId), bodyStrings([{ c: '+1555', t: text }]));
  const result = await handleCommand(store, inboundStreamName(messageId), inboundDecider, { type: 'ReceiveMessage', data: { ...data, sealed } }, { actor: 'test' }, { keys: { put: [put] } });
  if (!result.ok) throw new Error('not received');
  const { receivedAt: _, ...record } = (result.events[0] as Extract<InboundEvent, { type: 'InboundMessageReceived' }>).data;
  return record;
};

describe('the webhook dispatcher', () => {
  it("given a message whose webhook failed, when it leaves the queue otherwise, then the app's queue is not popped again at every round", async () => {
    const store = openStore();
    const broker = memoryBroker();
    const receiver = await failingReceiver();
    const apps = webhookApps(['a1'], receiver.url);
    const inbound = topics.inbound('a1');
    broker.add(inbound, await receive(store, 'a1', 'm1', 'hello'));
    const dispatcher = startWebhookDispatcher({ store, broker: broker as never, sealer, secrets, apps, settings, log: pino({ level: 'silent' }) });
    try {
      dispatcher.wake('a1');
      await vi.waitFor(() => expect(receiver.requests()).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 2 });
      // The failure is recorded on the message's stream: the dispatcher holds it for the app.
      await vi.waitFor(async () => expect((await store.readStream(inboundStreamName('m1'))).events.map((e) => e.type)).toContain('InboundWebhookAttempted'), { timeout: 5000, interval: 2 });
      broker.empty(inbound);
      await vi.waitFor(() => expect(broker.pops(inbound).empty).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 2 });
      const before = broker.pops(inbound).all;
      const started = Date.now();
      while (Date.now() - started < 200) await new Promise((resolve) => setTimeout(resolve, 10));
      const after = broker.pops(inbound).all;
      expect(after - before, `pops: ${before} when first found empty, ${after} about 20 rounds later`).toBeLessThanOrEqual(1);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given 40 webhook apps whose queues it does not know to be empty, when it starts, then it looks at every queue at once, not 8 per tick', async () => {
    const store = openStore();
    const broker = memoryBroker();
    const ids = Array.from({ length: 40 }, (_, i) => `a${i}`);
    const apps = webhookApps(ids, 'http://127.0.0.1:9/hook');
    // The tick is a minute away: only the rounds a freed slot asks for can look at the other 32.
    const dispatcher = startWebhookDispatcher({ store, broker: broker as never, sealer, secrets, apps, settings: { ...settings, idlePollMs: 60_000 }, log: pino({ level: 'silent' }) });
    try {
      await vi.waitFor(() => expect(ids.filter((id) => broker.pops(topics.inbound(id)).all === 0)).toEqual([]), { timeout: 5000, interval: 5 });
      expect(ids.map((id) => broker.pops(topics.inbound(id)).all)).toEqual(ids.map(() => 1));
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a broker that follows queues ahead of pops, when it starts, then it asks it to follow every webhook app\'s queue in one call, pops none of them before that is done, and asks once more only for an app added later', async () => {
    const store = openStore();
    const broker = memoryBroker();
    const ids = Array.from({ length: 40 }, (_, i) => `a${i}`);
    const apps = webhookApps(ids, 'http://127.0.0.1:9/hook');
    const follows: string[][] = [];
    let followed!: () => void;
    const following = { follow: (queues: readonly string[]) => (follows.push([...queues]), new Promise<void>((resolve) => (followed = resolve))) };
    const dispatcher = startWebhookDispatcher({ store, broker: Object.assign(broker, following) as never, sealer, secrets, apps, settings, log: pino({ level: 'silent' }) });
    try {
      await vi.waitFor(() => expect(follows).toHaveLength(1), { timeout: 5000, interval: 5 });
      expect(follows[0]!.sort()).toEqual(ids.map((id) => topics.inbound(id)).sort());
      // Rounds go on every 10 ms meanwhile; none pops a queue being followed.
      const started = Date.now();
      while (Date.now() - started < 100) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(ids.filter((id) => broker.pops(topics.inbound(id)).all > 0)).toEqual([]);
      followed();
      await vi.waitFor(() => expect(ids.filter((id) => broker.pops(topics.inbound(id)).all === 0)).toEqual([]), { timeout: 5000, interval: 5 });
      apps.apply({ type: 'AppCreated', data: appCreated('late', 'http://127.0.0.1:9/hook'), streamName: 'app-late', globalPosition: 100n } as unknown as RecordedEvent);
      await vi.waitFor(() => expect(follows).toHaveLength(2), { timeout: 5000, interval: 5 });
      expect(follows[1]).toEqual([topics.inbound('late')]);
      followed();
      await vi.waitFor(() => expect(broker.pops(topics.inbound('late')).all).toBeGreaterThan(0), { timeout: 5000, interval: 5 });
      expect(follows).toHaveLength(2);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a broker that tells arrivals and 40 webhook apps whose queues it knows to be empty, when ticks go by, then no tick looks at their queues, and a record that arrives from elsewhere is delivered at once', async () => {
    const store = openStore();
    const broker = arrivingBroker();
    const receiver = await receiverFailing(0);
    const ids = Array.from({ length: 40 }, (_, i) => `a${i}`);
    const apps = webhookApps(ids, receiver.url);
    const dispatcher = startWebhookDispatcher({ store, broker: broker as never, sealer, secrets, apps, settings: { ...settings, sweepMs: 60_000 }, log: pino({ level: 'silent' }) });
    try {
      // The first round pops every queue once (it knew none to be empty).
      await vi.waitFor(() => expect(ids.filter((id) => broker.pops(topics.inbound(id)).empty === 0)).toEqual([]), { timeout: 5000, interval: 5 });
      await vi.waitFor(() => expect(ids.filter((id) => broker.knownEmpty(topics.inbound(id)) === false)).toEqual([]), { timeout: 5000, interval: 5 });
      const looks = () => ids.reduce((sum, id) => sum + broker.looks(topics.inbound(id)), 0);
      const before = looks();
      // About 20 ticks of 10 ms.
      const started = Date.now();
      while (Date.now() - started < 200) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(looks() - before, 'knownEmpty asked of the idle apps over ~20 ticks').toBe(0);
      broker.arrive(topics.inbound('a7'), await receive(store, 'a7', 'm-elsewhere', 'from another process'));
      await vi.waitFor(() => expect(receiver.taken()).toEqual(['m-elsewhere']), { timeout: 5000, interval: 5 });
      expect(ids.filter((id) => broker.pops(topics.inbound(id)).all > 1)).toEqual(['a7']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('given a broker that tells arrivals, when a webhook fails twice, then the ticks try it again after its backoff until it is taken, and an app turned to webhook later is looked at', async () => {
    const store = openStore();
    const broker = arrivingBroker();
    const receiver = await receiverFailing(2);
    const apps = webhookApps(['a1'], receiver.url);
    const dispatcher = startWebhookDispatcher({ store, broker: broker as never, sealer, secrets, apps, settings: { ...settings, sweepMs: 60_000 }, log: pino({ level: 'silent' }) });
    try {
      await vi.waitFor(() => expect(broker.pops(topics.inbound('a1')).empty).toBe(1), { timeout: 5000, interval: 5 });
      broker.arrive(topics.inbound('a1'), await receive(store, 'a1', 'm1', 'hello'));
      await vi.waitFor(() => expect(receiver.taken()).toEqual(['m1']), { timeout: 5000, interval: 5 });
      expect(receiver.requests()).toBe(3);
      // An app whose queue holds a message (published before it was a webhook app's, say) is looked at once it becomes one.
      broker.add(topics.inbound('late'), await receive(store, 'late', 'm2', 'queued before'));
      apps.apply({ type: 'AppCreated', data: appCreated('late', receiver.url), streamName: 'app-late', globalPosition: 100n } as unknown as RecordedEvent);
      await vi.waitFor(() => expect(receiver.taken()).toEqual(['m1', 'm2']), { timeout: 5000, interval: 5 });
    } finally {
      await dispatcher.stop();
    }
  });
});
