/**
 * A measure of the Session connector on the fake swarm (not a test): messages per second it
 * delivers (sequentially and 8 at a time), and the latency from a contact's `store` to the
 * message reaching `onInbound` at the connector's fastest poll interval.
 *
 *   node --import tsx test/support/session-bench.ts [messages]
 */
import { performance } from 'node:perf_hooks';
import { MemorySessionIdentityStore } from '../../infra/messenger/session/identity-store.ts';
import { SessionConnector } from '../../infra/messenger/session/session-connector.ts';
import { FakeSessionSwarm } from './fake-session-swarm.ts';
import { SessionTestClient } from './session-test-client.ts';
import { fakeSwarmStorage } from './fake-swarm-storage.ts';

const count = Number(process.argv[2] ?? 300);
const swarm = await FakeSessionSwarm.start({ swarms: 3, nodesPerSwarm: 5, rateLimit: false });
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const pollMs = 250;
const connector = new SessionConnector({
  storage: fakeSwarmStorage(swarm, { requestTimeoutMs: 10_000 }),
  identities: new MemorySessionIdentityStore(),
  log: quiet,
  poll: { minMs: pollMs, maxMs: pollMs },
});
const from = await connector.provision('bench');
const contact = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
await connector.deliver({ messageId: 'warm-up', from, contactId: contact.sessionId, text: 'warm-up' });

let start = performance.now();
for (let i = 0; i < count; i++) await connector.deliver({ messageId: `s${i}`, from, contactId: contact.sessionId, text: `message ${i}` });
const sequential = count / ((performance.now() - start) / 1000);

start = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < count) {
      const i = next++;
      await connector.deliver({ messageId: `p${i}`, from, contactId: contact.sessionId, text: `message ${i}` });
    }
  }),
);
const parallel = count / ((performance.now() - start) / 1000);

const sentAt = new Map<string, number>();
const latencies: number[] = [];
await connector.listen(async (message) => {
  const at = sentAt.get(message.text);
  if (at !== undefined) latencies.push(performance.now() - at);
});
const samples = 40;
for (let i = 0; i < samples; i++) {
  const text = `latency ${i}`;
  sentAt.set(text, performance.now());
  await contact.send(from, text);
  await new Promise((r) => setTimeout(r, 97));
}
const deadline = Date.now() + 10_000;
while (latencies.length < samples && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(0);
console.log(JSON.stringify({
  messages: count,
  deliverPerSecondSequential: Number(sequential.toFixed(1)),
  deliverPerSecond8Concurrent: Number(parallel.toFixed(1)),
  pollIntervalMs: pollMs,
  receiveLatencyMs: { samples: latencies.length, p50: Number(pct(50)), p90: Number(pct(90)), max: Number(pct(100)) },
}));
await connector.close();
await swarm.close();
