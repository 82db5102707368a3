import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HistoryChecker } from '../support/history-checker.ts';
import { deliveryLag, readOutboxes, report, startCluster, startTraffic, untilDelivered, warningsOf, type Cluster } from '../support/fault-cluster.ts';
import { postgresTools, startOwnPostgres, type OwnPostgres } from '../support/fault-servers.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * PostgreSQL restarted under load (issue 48): two instances of role `all` on Kafka and on a
 * PostgreSQL cluster of this test's own (so that no other suite loses its store), traffic both
 * ways through both; the cluster is stopped (fast shutdown: sessions ended at once) for DOWN_MS,
 * then started again. Meanwhile every request is answered, by the interface's 503 where it needs
 * the store; afterwards both instances serve again by themselves, within the bound of
 * docs/durability.md, and the history checker finds nothing lost, popped twice or delivered twice.
 */
const DOWN_MS = Number(process.env.FAULT_PG_DOWN_MS ?? 10_000);
/** docs/durability.md, "Faults": from PostgreSQL answering again to both instances accepting and delivering. */
const RECOVERY_BOUND_MS = 15_000;
/** A request not answered within this is a hang, not the interface's 503. */
const ANSWER_WITHIN_MS = 20_000;

const tools = await postgresTools();
let postgres: OwnPostgres | undefined;
let cluster: Cluster | undefined;
beforeAll(async () => {
  if (tools.available) postgres = await startOwnPostgres(tools.version);
}, 180_000);
afterAll(async () => {
  await cluster?.close();
  // Started again whatever happened, then dropped: nothing of this cluster is left behind.
  await postgres?.start().catch(() => undefined);
  await postgres?.close();
}, 180_000);

describe.skipIf(!inject('kafkaBrokers') || !tools.available)('PostgreSQL restarted under load', () => {
  it(`answers 503 while it is down (${DOWN_MS / 1000} s), recovers by itself within ${RECOVERY_BOUND_MS / 1000} s, and loses nothing`, async () => {
    const brokers = inject('kafkaBrokers');
    cluster = await startCluster({ count: 2, env: { EVENT_STORE: 'postgres', DATABASE_URL: postgres!.url, BROKER: 'kafka', KAFKA_BROKERS: brokers } });
    const c = cluster;
    const checker = new HistoryChecker();
    const traffic = startTraffic(c, checker, { inboundPerChunk: 4, inboundEveryMs: 500, sendBatch: 4, sendEveryMs: 200, requestTimeoutMs: ANSWER_WITHIN_MS });
    // Under load: both instances accepting, messages delivered.
    await waitFor(() => {
      readOutboxes(c, checker);
      return checker.verdict().counts.outbound.delivered >= 40;
    }, 60_000, 'deliveries before the restart', 200);

    const stoppedAt = Date.now();
    await postgres!.stop();
    const downAt = Date.now();
    // Every instance refuses sends with the interface's 503 while the store is down.
    const first503 = await waitFor(() => traffic.answers.find((a) => a.at > downAt && a.kind === 'send' && a.status === 503), 15_000, 'a 503 on send', 50);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, DOWN_MS - (Date.now() - stoppedAt))));
    await postgres!.start();
    const upAt = Date.now();

    // Recovery: each instance accepts a send again, a poll returns messages, a message is delivered.
    const recovered = async (via: string, kind: 'send' | 'poll', status: number) =>
      (await waitFor(() => traffic.answers.find((a) => a.at > upAt && a.via === via && a.kind === kind && a.status === status), RECOVERY_BOUND_MS + 30_000, `${via} ${kind} ${status} after the restart`, 50)).at - upAt;
    const sendRecoveryMs = [await recovered('i0', 'send', 202), await recovered('i1', 'send', 202)];
    const deliveredBefore = checker.verdict().counts.outbound.delivered;
    const deliveryRecoveryMs = (await waitFor(() => {
      readOutboxes(c, checker);
      return checker.verdict().counts.outbound.delivered > deliveredBefore ? Date.now() : undefined;
    }, RECOVERY_BOUND_MS + 30_000, 'a delivery after the restart', 100)) - upAt;

    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await traffic.stop();
    await traffic.drain(90_000);
    await untilDelivered(c, checker, 90_000).catch((error) => {
      throw new Error(`${String(error)}\n${c.instances.map((r) => warningsOf(r)).join('\n---\n')}`);
    });
    await waitFor(async () => ((await deliveryLag(brokers, c.shared.KAFKA_TOPIC_PREFIX!)) === 0 ? true : undefined), 60_000, 'the delivery group caught up', 500);
    readOutboxes(c, checker);
    const during = traffic.answers.filter((a) => a.at > downAt && a.at < upAt);
    const verdict = report('postgres restart', checker, {
      downMs: upAt - stoppedAt,
      first503AfterMs: first503.at - downAt,
      sendRecoveryMs,
      deliveryRecoveryMs,
      answersWhileDown: Object.fromEntries(['send', 'poll'].map((kind) => [kind, countBy(during.filter((a) => a.kind === kind).map((a) => a.status))])),
      statuses: traffic.statuses,
      bodies: traffic.bodies,
    });
    checker.assertClean('postgres restart');
    // One of the interface's 503 answers of a send: the data keys' store or the append, whichever
    // the send reached first while PostgreSQL was away.
    expect(['Failed to enqueue messages', 'Key store unavailable']).toContain((traffic.bodies['send 503'] as { error?: string } | undefined)?.error);
    expect(Object.keys(traffic.statuses).filter((k) => k.endsWith('no answer')), `requests not answered within ${ANSWER_WITHIN_MS} ms`).toEqual([]);
    expect(Math.max(...sendRecoveryMs, deliveryRecoveryMs)).toBeLessThan(RECOVERY_BOUND_MS);
    expect(verdict.counts.outbound.refused).toBeGreaterThan(0);
    for (const relay of c.instances) expect(relay.child.exitCode).toBe(null);
  });
});

const countBy = (values: readonly number[]) => values.reduce<Record<string, number>>((acc, v) => ((acc[v] = (acc[v] ?? 0) + 1), acc), {});
