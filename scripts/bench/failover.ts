/**
 * The takeover step of `npm run bench` (issue 27, docs/durability.md): two Relay instances (role
 * `all`) on one Kafka and one PostgreSQL; the one holding the publisher's lease is SIGKILLed, and
 * the survivor is polled. Reports kill → first pop of a message queued before the kill (poll needs
 * no takeover), and kill → first pop of a message written after it (the survivor must take the
 * publisher's lease over first: the takeover time).
 */
import { randomBytes } from 'node:crypto';
import { startRelayProcess, type RelayProcess } from '../../test/support/relay-process.ts';
import { waitFor } from '../../test/support/wait-for.ts';

export interface FailoverFigures {
  readonly queuedMs: number;
  readonly takeoverMs: number;
}

/** Waits as this step always has: a look every 20 ms. */
const until = <T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string) => waitFor(probe, timeoutMs, what, 20);

/** Whether the instance runs the leased role now (its `/metrics`). */
const holds = async (relay: RelayProcess, role: string): Promise<boolean> =>
  (await (await fetch(`${relay.url}/metrics`)).text()).includes(`relay_role_held{group="delivery",role="${role}"} 1`);

export const measureFailover = async (brokers: string, databaseUrl: string): Promise<FailoverFigures> => {
  const shared = {
    BROKER: 'kafka',
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: `bench-failover-${randomBytes(4).toString('hex')}.`,
    EVENT_STORE: 'postgres',
    DATABASE_URL: databaseUrl,
    DATABASE_SCHEMA: `relay_bench_failover_${randomBytes(4).toString('hex')}`,
    RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
    RATE_LIMIT_POLL_PER_MIN: '1000000',
  };
  const relays: RelayProcess[] = [];
  try {
    relays.push(await startRelayProcess({ env: shared }));
    relays.push(await startRelayProcess({ env: shared }));
    const [zero] = relays as [RelayProcess, RelayProcess];
    const session = (await zero.cli(['session', 'create', '--email', 'failover@example.com'])).stdout.trim();
    const dash = `${zero.url}/dashboard/api/dashboard`;
    const headers = { cookie: `relay_session=${session}`, 'content-type': 'application/json' };
    const app = (await (await fetch(`${dash}/apps`, { method: 'POST', headers, body: JSON.stringify({ name: 'failover', protocol: ['signal'] }) })).json()) as { id: string };
    const key = ((await (await fetch(`${dash}/credentials`, { method: 'POST', headers, body: JSON.stringify({ type: 'api-key', appIds: [app.id], name: 'failover' }) })).json()) as { secret: string }).secret;
    const victim = await until(async () => {
      const held = await Promise.all(relays.map((relay) => holds(relay, 'publisher')));
      return held.filter(Boolean).length === 1 ? relays[held.indexOf(true)] : undefined;
    }, 30_000, 'one holder of the publisher lease');
    const survivor = relays.find((relay) => relay !== victim)!;
    const poll = async (limit = 1) => {
      const res = await fetch(`${survivor.url}/api/v1/messages/poll?limit=${limit}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`failover bench: poll answered ${res.status}`);
      return ((await res.json()) as { messages: Array<{ content: string }> }).messages;
    };
    await until(async () => ((await survivor.cli(['session', 'list', '--email', 'failover@example.com'])).code === 0 ? true : undefined), 10_000, 'the survivor');
    const injected = await survivor.cli(['simulate', 'inbound', '--app', app.id, '--messenger', 'signal', '--contact', '+15550001', '--text', 'before', '--count', '20']);
    if (injected.code !== 0) throw new Error(injected.stderr);
    await until(async () => ((await poll()).length > 0 ? true : undefined), 30_000, 'a message before the kill');
    await victim!.kill();
    const killedAt = Date.now();
    await until(async () => ((await poll()).length > 0 ? true : undefined), 60_000, 'a queued message after the kill');
    const queuedMs = Date.now() - killedAt;
    const after = await survivor.cli(['simulate', 'inbound', '--app', app.id, '--messenger', 'signal', '--contact', '+15550001', '--text', 'after']);
    if (after.code !== 0) throw new Error(after.stderr);
    await until(async () => ((await poll(50)).some((m) => m.content === 'after') ? true : undefined), 60_000, 'the message written after the kill');
    return { queuedMs, takeoverMs: Date.now() - killedAt };
  } finally {
    for (const relay of relays) await relay.stop();
    for (const relay of relays) await relay.cleanup();
  }
};
