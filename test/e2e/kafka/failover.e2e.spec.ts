import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor } from '../../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../../support/relay-process.ts';

/**
 * Failover on Kafka and PostgreSQL (issue 27, docs/durability.md): two `relay start` processes of
 * role `all` on one Kafka and one PostgreSQL, as `npm start` twice would run them. Instance 0 is
 * SIGKILLed half-way; instance 1 must then serve every remaining message exactly once, within
 * the takeover bound (Kafka's session timeout plus a little).
 */
const MESSAGES = Number(process.env.FAILOVER_MESSAGES ?? 200);
const LIMIT = 7;
/** Messages a contact writes after the kill. */
const LATE = 10;
/** The bound the survivor takes over within (docs/durability.md): Kafka's session timeout (6 s), a rebalance, and margin for a busy machine. */
const TAKEOVER_BOUND_MS = 15_000;

let started: RelayProcess[] = [];
afterEach(async () => {
  for (const relay of started) await relay.stop();
  for (const relay of started) await relay.cleanup();
  started = [];
});

const cluster = async (extra: Record<string, string> = {}) => {
  const shared = {
    ...extra,
    EVENT_STORE: 'postgres',
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    DATABASE_SCHEMA: `relay_e2e_failover_${randomBytes(4).toString('hex')}`,
    ...(process.env.FAILOVER_NO_SECRET ? {} : { RELAY_SECRET_KEY: randomBytes(32).toString('hex') }),
    KAFKA_TOPIC_PREFIX: `failover-${randomBytes(4).toString('hex')}.`,
    RATE_LIMIT_POLL_PER_MIN: '100000',
    RATE_LIMIT_SEND_FREE_PER_MIN: '100000',
  };
  const zero = await startRelayProcess({ env: shared });
  started.push(zero);
  const one = await startRelayProcess({ env: shared });
  started.push(one);
  const account = await createAccount(zero);
  const app = await createApp(zero, account, ['signal']);
  const { secret: key } = await createKey(zero, account, [app.appId]);
  await waitFor(async () => (await api(one, 'GET', '/auth/verify', { key })).status === 200, 15_000, 'the key on instance 1');
  return { zero, one, appId: app.appId, key };
};

const outbox = async (relay: RelayProcess) => {
  const result = await relay.cli(['simulate', 'outbox']);
  return result.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { messageId: string; ok: boolean; message?: string });
};

describe('failover across two Relay instances on Kafka and PostgreSQL', () => {
  it(`serves each of ${MESSAGES} inbound messages exactly once when the instance that published them is SIGKILLed half-way, and those written after`, async () => {
    const { zero, one, appId, key } = await cluster();
    const injected = await zero.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550100', '--text', 'hello', '--count', String(MESSAGES)]);
    expect(injected.code, injected.stderr).toBe(0);

    const seen = new Map<string, string>();
    const poll = async (relay: RelayProcess) => {
      const res = await api(relay, 'GET', `/messages/poll?limit=${LIMIT}`, { key });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).not.toBeNull();
      expect(res.body.count).toBe(res.body.messages.length);
      for (const m of res.body.messages as Array<{ messageId: string; content: string }>) {
        expect(seen.has(m.messageId), `${m.messageId} popped twice`).toBe(false);
        seen.set(m.messageId, m.content);
      }
      return res.body.messages.length as number;
    };

    // Alternate polls between the instances until half the messages came back.
    let turn = 0;
    await waitFor(async () => {
      await poll(turn++ % 2 === 0 ? zero : one);
      return seen.size >= MESSAGES / 2 ? true : undefined;
    }, 60_000, 'half the messages, polled alternately');

    await zero.kill();
    const killedAt = Date.now();
    // Messages that arrive after the kill need a publisher: the survivor's, if instance 0 held its lease.
    const late = await one.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550101', '--text', 'late', '--count', String(LATE)]);
    expect(late.code, late.stderr).toBe(0);
    let firstPopAt: number | undefined;
    await waitFor(async () => {
      const got = await poll(one);
      if (got > 0) firstPopAt ??= Date.now();
      return seen.size >= MESSAGES + LATE ? true : undefined;
    }, TAKEOVER_BOUND_MS + 60_000, 'the rest of the messages from the survivor');
    console.info(`failover (inbound): first pop by the survivor ${firstPopAt! - killedAt} ms after the kill, the last ${Date.now() - killedAt} ms after it`);
    expect(firstPopAt! - killedAt).toBeLessThan(TAKEOVER_BOUND_MS);
    expect(await poll(one)).toBe(0);
    expect(seen.size).toBe(MESSAGES + LATE);
    expect(new Set(seen.values())).toEqual(
      new Set([...Array.from({ length: MESSAGES }, (_, i) => `hello #${i + 1}`), ...Array.from({ length: LATE }, (_, i) => `late #${i + 1}`)]),
    );
  });

  it(`delivers each of ${MESSAGES} messages sent through instance 0 exactly once after instance 0 is SIGKILLed`, async () => {
    // Both simulated messengers fail every attempt (transiently) until instance 0 dies, so that
    // nothing is delivered before the kill, whichever instance holds the outbound partition and
    // the publisher's lease: the survivor must take over whatever instance 0 held.
    const { zero, one, appId, key } = await cluster({ DELIVERY_MAX_ATTEMPTS: '8', DELIVERY_BACKOFF_BASE_MS: '500', DELIVERY_BACKOFF_FACTOR: '2' });
    const contactId = '+15550200';
    for (const relay of [zero, one]) expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contactId, '--times', '-1'])).code).toBe(0);
    const sent: string[] = [];
    for (let i = 0; i < MESSAGES; i += 50) {
      const batch = Array.from({ length: Math.min(50, MESSAGES - i) }, (_, j) => ({ appId, messenger: 'signal', contactId, message: `out #${i + j + 1}` }));
      const res = await api(zero, 'POST', '/messages/send', { key, body: { messages: batch } });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      sent.push(...(res.body.successfulMessages as Array<{ messageId: string }>).map((m) => m.messageId));
    }
    const attempted = async () => [...(await outbox(zero)), ...(await outbox(one))];
    await waitFor(async () => ((await attempted()).length > 0 ? true : undefined), 30_000, 'a first attempt');
    await zero.kill();
    const killedAt = Date.now();
    expect((await one.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contactId, '--times', '0'])).code).toBe(0);
    let firstDeliveryAt: number | undefined;
    const delivered = await waitFor(async () => {
      const ok = (await attempted()).filter((d) => d.ok);
      if (ok.length > 0) firstDeliveryAt ??= Date.now();
      return new Set(ok.map((d) => d.messageId)).size >= MESSAGES ? ok : undefined;
    }, TAKEOVER_BOUND_MS + 60_000, 'every message delivered');
    console.info(`failover (outbound): first delivery ${firstDeliveryAt! - killedAt} ms after the kill, all ${MESSAGES} after ${Date.now() - killedAt} ms`);
    expect(firstDeliveryAt! - killedAt).toBeLessThan(TAKEOVER_BOUND_MS);
    const counts = new Map<string, number>();
    for (const d of delivered) counts.set(d.messageId, (counts.get(d.messageId) ?? 0) + 1);
    expect([...counts.entries()].filter(([, n]) => n > 1), 'messages delivered twice').toEqual([]);
    expect(new Set(counts.keys())).toEqual(new Set(sent));
    expect((await outbox(zero)).filter((d) => d.ok)).toEqual([]);
  });

  it('refuses to start an instance whose secret key is not the one the shared store is sealed with (the cause of the regression)', async () => {
    const shared = {
      EVENT_STORE: 'postgres',
      DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      DATABASE_SCHEMA: `relay_e2e_failover_${randomBytes(4).toString('hex')}`,
      KAFKA_TOPIC_PREFIX: `failover-${randomBytes(4).toString('hex')}.`,
    };
    // As `npm start` twice runs them: no RELAY_SECRET_KEY, so the first generates one into its DATA_DIR.
    const zero = await startRelayProcess({ env: shared });
    started.push(zero);
    const refusal = (error: unknown) => String((error as Error).message).split('\n').find((line) => line.includes('RELAY_SECRET_KEY'));
    const withoutKey = await startRelayProcess({ env: shared }).then(
      (relay) => (started.push(relay), 'started'),
      refusal,
    );
    expect(withoutKey).toMatch(/^relay: Invalid configuration RELAY_SECRET_KEY: this event store is sealed with a secret key this instance does not have \(fingerprint [0-9a-f]{8}…\): set it, or copy secret.key from the DATA_DIR of the instance that made it; every Relay instance on one event store needs the same RELAY_SECRET_KEY$/);
    const otherKey = randomBytes(32).toString('hex');
    const wrongKey = await startRelayProcess({ env: { ...shared, RELAY_SECRET_KEY: otherKey } }).then(
      (relay) => (started.push(relay), 'started'),
      refusal,
    );
    expect(wrongKey).toMatch(/^relay: Invalid configuration RELAY_SECRET_KEY: not the key this event store is sealed with \(fingerprint [0-9a-f]{8}…, this key's [0-9a-f]{8}…\); every Relay instance on one event store needs the same RELAY_SECRET_KEY$/);
    expect(wrongKey).not.toContain(otherKey);
    const key = fs.readFileSync(path.join(zero.dataDir, 'secret.key'), 'utf8').trim();
    const one = await startRelayProcess({ env: { ...shared, RELAY_SECRET_KEY: key } });
    started.push(one);
    expect((await fetch(`${one.url}/api/v1/health`)).status).toBe(200);
  });
});
