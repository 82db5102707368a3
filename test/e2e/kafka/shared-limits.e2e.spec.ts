import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor } from '../../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../../support/relay-process.ts';

/**
 * Three Relay processes on one Kafka and one PostgreSQL, behind a round-robin balancer (this test):
 * A runs every role, B and C the API only. One credential's budgets hold across all three
 * (docs/limits.md, "Several instances"): never more than the budget in a window, at most a slice
 * per other instance less while slices are parked, the whole budget once they are given back, and
 * one window (its reset time) whichever instance answers. One instance killed mid-window takes
 * only its slice with it.
 */
const POLL_BUDGET = 30; // slices of 3
const SEND_BUDGET = 60; // slices of 6
const VERIFY_BUDGET = 40; // slices of 4

const started: RelayProcess[] = [];
let relays: RelayProcess[] = [];
let key = '';
let streamKeys: string[] = [];
let appId = '';

beforeAll(async () => {
  const shared = {
    EVENT_STORE: 'postgres',
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    DATABASE_SCHEMA: `relay_e2e_limits_${randomBytes(4).toString('hex')}`,
    RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
    KAFKA_TOPIC_PREFIX: `limits-${randomBytes(4).toString('hex')}.`,
    RATE_LIMIT_POLL_PER_MIN: String(POLL_BUDGET),
    RATE_LIMIT_SEND_FREE_PER_MIN: String(SEND_BUDGET),
    RATE_LIMIT_VERIFY_PER_MIN: String(VERIFY_BUDGET),
    SIGN_IN_PER_CLIENT: '8',
    EVENTS_MAX_STREAMS_PER_KEY: '3',
    EVENTS_MAX_STREAMS_PER_USER: '4',
  };
  const a = await startRelayProcess({ env: shared });
  started.push(a);
  const [b, c] = await Promise.all([startRelayProcess({ env: shared, role: 'api' }), startRelayProcess({ env: shared, role: 'api' })]);
  started.push(b, c);
  relays = [a, b, c];
  const account = await createAccount(a);
  const app = await createApp(a, account, ['signal']);
  appId = app.appId;
  key = (await createKey(a, account, [appId])).secret;
  streamKeys = [(await createKey(a, account, [appId])).secret, (await createKey(a, account, [appId])).secret];
  // B and C learn of the keys from the shared history: a second key, made after the first, is
  // waited for (a verify with the key under test would spend its budget).
  const later = (await createKey(a, account, [appId])).secret;
  for (const relay of [b, c]) await waitFor(async () => (await api(relay, 'GET', '/auth/verify', { key: later })).status === 200, 20_000, 'the keys on B and C');
}, 180_000);

afterAll(async () => {
  for (const relay of started) await relay.stop();
  for (const relay of started) await relay.cleanup();
});

/** Round-robin requests until every instance refused twice in a row; the answers in order. */
const spend = async (request: (relay: RelayProcess) => Promise<{ status: number; headers: Headers }>, among = relays) => {
  const answers: { relay: number; status: number; reset: string | null }[] = [];
  let refusedInARow = 0;
  for (let i = 0; refusedInARow < among.length * 2 && i < 500; i++) {
    const res = await request(among[i % among.length]!);
    answers.push({ relay: i % among.length, status: res.status, reset: res.headers.get('x-ratelimit-reset') });
    refusedInARow = res.status === 429 ? refusedInARow + 1 : 0;
  }
  return answers;
};

/** Waits past the instances' idle give-back (a slice idle for 1 s goes back at the next look, each second) and their pause after a refusal. */
const letSlicesGoBack = () => new Promise((resolve) => setTimeout(resolve, 3_000));

describe('the account API across three instances', () => {
  it('holds one client to its sign-in attempts whichever instance it asks, with one Retry-After', async () => {
    const start = async (relay: RelayProcess) => {
      const res = await fetch(`${relay.url}/dashboard/auth/messenger`, { method: 'POST', headers: { origin: relay.url } });
      await res.text();
      return { status: res.status, headers: res.headers };
    };
    const first = await spend(start);
    await letSlicesGoBack();
    const second = await spend(start);
    const answers = [...first, ...second];
    expect(answers.filter((a) => a.status === 202)).toHaveLength(8);
    expect(answers.filter((a) => ![202, 429].includes(a.status))).toEqual([]);
  });
});

describe('open event streams across three instances', () => {
  it('caps the streams of a key and of a user over every instance, and frees a seat when a stream ends', async () => {
    const open: { controller: AbortController; response: Response }[] = [];
    const openStream = async (relay: RelayProcess, streamKey: string) => {
      const controller = new AbortController();
      const response = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${streamKey}` }, signal: controller.signal });
      if (response.status === 200) open.push({ controller, response }); // kept referenced: a collected body would close the stream
      return { status: response.status, headers: response.headers, body: response.status === 200 ? undefined : await response.json() };
    };
    try {
      // Key 1: three streams on three instances, the fourth refused for the key.
      for (const relay of relays) expect((await openStream(relay, streamKeys[0]!)).status).toBe(200);
      const fourth = await openStream(relays[0]!, streamKeys[0]!);
      expect(fourth.status).toBe(429);
      expect(fourth.body).toEqual({ error: 'Too many open event streams for this API key' });
      expect(fourth.headers.get('retry-after')).toBe('1');
      // Key 2 of the same user: one more (four for the user), then the user's cap.
      expect((await openStream(relays[1]!, streamKeys[1]!)).status).toBe(200);
      const overUser = await openStream(relays[2]!, streamKeys[1]!);
      expect(overUser.status).toBe(429);
      expect(overUser.body).toEqual({ error: 'Too many open event streams for this user' });
      // A stream that ends frees its seat for any instance.
      open.shift()!.controller.abort();
      await waitFor(async () => (await openStream(relays[2]!, streamKeys[1]!)).status === 200, 10_000, 'a freed seat');
    } finally {
      for (const stream of open) stream.controller.abort();
    }
  });
});

describe('budgets of one credential across three instances', () => {
  it('poll: never more than the budget; the whole budget once parked slices are given back; one reset time', async () => {
    const poll = (relay: RelayProcess) => api(relay, 'GET', '/messages/poll', { key });
    const first = await spend(poll);
    const allowedFirst = first.filter((a) => a.status === 200).length;
    expect(allowedFirst).toBeLessThanOrEqual(POLL_BUDGET);
    expect(allowedFirst).toBeGreaterThanOrEqual(POLL_BUDGET - 2 * 3); // at most a slice parked on each other instance
    await letSlicesGoBack();
    const second = await spend(poll);
    expect(allowedFirst + second.filter((a) => a.status === 200).length).toBe(POLL_BUDGET);
    // Every refusal, whichever instance gave it, names the same window's end.
    const resets = new Set([...first, ...second].filter((a) => a.status === 429).map((a) => a.reset));
    expect(resets.size).toBe(1);
    expect(new Set([...first, ...second].filter((a) => a.status === 429).map((a) => a.relay))).toEqual(new Set([0, 1, 2]));
  });

  it('send: never more messages than the budget, batches refused whole', async () => {
    const send = (relay: RelayProcess) =>
      api(relay, 'POST', '/messages/send', { key, body: { messages: Array.from({ length: 5 }, (_, i) => ({ appId, messenger: 'signal', contactId: '+15550100', message: `m${i}` })) } });
    const first = await spend(send);
    await letSlicesGoBack();
    const second = await spend(send);
    const accepted = [...first, ...second].filter((a) => a.status === 202).length * 5;
    expect(accepted).toBe(SEND_BUDGET);
  });

  it('verify: one instance killed mid-window takes only its slice with it', async () => {
    const verify = (relay: RelayProcess) => api(relay, 'GET', '/auth/verify', { key });
    const [a, b, c] = relays as [RelayProcess, RelayProcess, RelayProcess];
    // C leases a slice (4), spends one, and dies holding 3 unspent.
    expect((await verify(c)).status).toBe(200);
    await c.kill();
    const rest = await spend(verify, [a, b]);
    await letSlicesGoBack();
    const more = await spend(verify, [a, b]);
    const allowed = 1 + [...rest, ...more].filter((r) => r.status === 200).length;
    expect(allowed).toBeLessThanOrEqual(VERIFY_BUDGET);
    expect(allowed).toBeGreaterThanOrEqual(VERIFY_BUDGET - 4); // C's slice, lost until the window ends
  });
});
