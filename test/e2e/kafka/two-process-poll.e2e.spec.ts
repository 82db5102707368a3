import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor } from '../../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../../support/relay-process.ts';

/**
 * Two Relay processes on one Kafka and one PostgreSQL, as a cluster runs: A runs every role, B only
 * the API. A bot alternates its polls between them; B is killed half-way. Every inbound message
 * must come back exactly once.
 */
const MESSAGES = 2000;
const LIMIT = 50;

const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) await relay.stop();
  for (const relay of started) await relay.cleanup();
});

describe('destructive poll across two Relay processes on Kafka', () => {
  it(`returns each of ${MESSAGES} inbound messages exactly once, also when one process dies`, async () => {
    const shared = {
      EVENT_STORE: 'postgres',
      DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      DATABASE_SCHEMA: `relay_e2e_two_${randomBytes(4).toString('hex')}`,
      RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
      KAFKA_TOPIC_PREFIX: `two-${randomBytes(4).toString('hex')}.`,
      RATE_LIMIT_POLL_PER_MIN: '100000',
    };
    const a = await startRelayProcess({ env: shared });
    started.push(a);
    const b = await startRelayProcess({ env: shared, role: 'api' });
    started.push(b);

    const account = await createAccount(a);
    const app = await createApp(a, account, ['signal']);
    const { secret: key } = await createKey(a, account, [app.appId]);
    // B learns of the key from the shared event store.
    await waitFor(async () => (await api(b, 'GET', '/auth/verify', { key })).status === 200, 10_000, 'the key on B');

    const injected = await a.cli(['simulate', 'inbound', '--app', app.appId, '--messenger', 'signal', '--contact', '+15550100', '--text', 'hello', '--count', String(MESSAGES)]);
    expect(injected.code, injected.stderr).toBe(0);

    const seen = new Map<string, string>();
    const poll = async (relay: RelayProcess) => {
      const res = await api(relay, 'GET', `/messages/poll?limit=${LIMIT}`, { key });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.queue).toBe(`poll:${app.appId}`);
      expect(res.body.count).toBe(res.body.messages.length);
      expect(res.body.messages.length).toBeLessThanOrEqual(LIMIT);
      for (const m of res.body.messages as Array<{ messageId: string; content: string }>) {
        expect(seen.has(m.messageId), `${m.messageId} popped twice`).toBe(false);
        seen.set(m.messageId, m.content);
      }
      return res.body.messages.length as number;
    };

    // Both processes see the messages once A has published them.
    await waitFor(async () => (await poll(b)) > 0, 30_000, 'messages on B');
    await waitFor(async () => (await poll(a)) > 0, 30_000, 'messages on A');

    // Alternate; while messages remain, neither process answers empty (none waits on the other).
    let turn = 0;
    let killed = false;
    while (seen.size < MESSAGES) {
      const relay = killed || turn++ % 2 === 0 ? a : b;
      const got = await poll(relay);
      expect(got, `an empty poll on ${relay === a ? 'A' : 'B'} with ${MESSAGES - seen.size} messages left`).toBeGreaterThan(0);
      if (!killed && seen.size >= MESSAGES / 2) {
        await b.kill(); // between two polls: nothing of B's is in flight
        killed = true;
      }
    }
    expect(await poll(a)).toBe(0);
    expect(seen.size).toBe(MESSAGES);
    expect(new Set(seen.values())).toEqual(new Set(Array.from({ length: MESSAGES }, (_, i) => `hello #${i + 1}`)));
  });
});
