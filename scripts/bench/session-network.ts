/**
 * Relay's Session client on the fake swarm (test/support/fake-session-swarm.ts: HTTPS storage
 * servers on loopback that serve the storage RPC and onion requests as the real server does), by
 * transport: messages per second the connector stores (one at a time, and 8 at a time), and the
 * time from a contact's `store` to the message being handed to the gateway at a 250 ms poll
 * (`pollable` is that plus the gateway's record and the queue publisher: "inbound → pollable",
 * measured elsewhere in the bench). Direct HTTPS is the onion transport's anchor: the same
 * client, swarm and machine, one hop instead of four.
 */
import { performance } from 'node:perf_hooks';
import { MemorySessionIdentityStore } from '../../infra/messenger/session/identity-store.ts';
import { SessionConnector } from '../../infra/messenger/session/session-connector.ts';
import { FakeSessionSwarm } from '../../test/support/fake-session-swarm.ts';
import { fakeSwarmStorage } from '../../test/support/fake-swarm-storage.ts';
import { SessionTestClient } from '../../test/support/session-test-client.ts';
import { percentile } from './measures.ts';

export interface SessionFigures {
  readonly transport: 'direct' | 'onion';
  readonly sequentialPerSecond: number;
  readonly concurrentPerSecond: number;
  readonly receive: { readonly samples: number; readonly p50: number; readonly p90: number; readonly max: number };
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const POLL_MS = 250;

const rate = async (count: number, inFlight: number, one: (i: number) => Promise<unknown>): Promise<number> => {
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await one(next++);
    }),
  );
  return count / ((performance.now() - start) / 1000);
};

const measureTransport = async (swarm: FakeSessionSwarm, transport: 'direct' | 'onion', count: number): Promise<SessionFigures> => {
  const connector = new SessionConnector({
    storage: fakeSwarmStorage(swarm, { requestTimeoutMs: 10_000, transport }),
    identities: new MemorySessionIdentityStore(),
    log: quiet,
    poll: { minMs: POLL_MS, maxMs: POLL_MS },
  });
  try {
    const from = await connector.provision(`bench-${transport}`);
    const contact = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
    const send = async (id: string) => {
      const result = await connector.deliver({ messageId: id, from, contactId: contact.sessionId, text: `message ${id}` });
      if (!result.ok) throw new Error(`a bench send failed: ${result.reason}`);
    };
    await send(`${transport}-warm-up`);
    const sequentialPerSecond = await rate(count, 1, (i) => send(`${transport}-s${i}`));
    const concurrentPerSecond = await rate(count, 8, (i) => send(`${transport}-p${i}`));
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
    const deadline = Date.now() + 15_000;
    while (latencies.length < samples && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return {
      transport,
      sequentialPerSecond,
      concurrentPerSecond,
      receive: { samples: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), max: percentile(latencies, 100) },
    };
  } finally {
    await connector.close();
  }
};

/** Both transports on one fake swarm of 15 nodes. */
export const measureSessionNetwork = async (count = 200): Promise<SessionFigures[]> => {
  const swarm = await FakeSessionSwarm.start({ swarms: 3, nodesPerSwarm: 5, rateLimit: false });
  try {
    return [await measureTransport(swarm, 'direct', count), await measureTransport(swarm, 'onion', count)];
  } finally {
    await swarm.close();
  }
};

export const sessionRows = (figures: SessionFigures[]): [string, string][] => {
  const direct = figures.find((f) => f.transport === 'direct')!;
  return figures.flatMap((f): [string, string][] => [
    [
      `Session send (${f.transport}, fake swarm)`,
      `${f.sequentialPerSecond.toFixed(0)} messages/s one at a time, ${f.concurrentPerSecond.toFixed(0)} 8 at a time` +
        (f === direct ? '' : ` (${(f.sequentialPerSecond / direct.sequentialPerSecond).toFixed(2)}× / ${(f.concurrentPerSecond / direct.concurrentPerSecond).toFixed(2)}× direct)`),
    ],
    [`Session store → handed to the gateway (${f.transport}, ${POLL_MS} ms poll)`, `p50 ${f.receive.p50.toFixed(0)} ms, p90 ${f.receive.p90.toFixed(0)} ms, max ${f.receive.max.toFixed(0)} ms (${f.receive.samples} samples)`],
  ]);
};

// Alone: node --import tsx scripts/bench/session-network.ts [messages]
if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [name, value] of sessionRows(await measureSessionNetwork(Number(process.argv[2] ?? 200)))) console.log(`${name}: ${value}`);
}
