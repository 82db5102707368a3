import { afterAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor } from '../../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../../support/relay-process.ts';

/**
 * A Relay on Kafka restarted right after a SIGKILL: its HTTP port answers at once (health 503
 * `starting` until the delivery pipeline runs), and what was queued before the kill is delivered
 * and polled after it. Before, the port stayed closed for about 10 s while the pipeline's
 * consumer group waited out the dead member's session (docs/kafka-startup.md).
 */
const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) await relay.stop();
  await started[0]?.cleanup();
});

const outbox = async (relay: RelayProcess, messageId: string) => {
  const result = await relay.cli(['simulate', 'outbox', '--message', messageId]);
  return result.stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { ok: boolean });
};

describe('a restart on Kafka after SIGKILL', () => {
  it('answers HTTP within a few seconds, says it is starting until the pipeline runs, and loses nothing', async () => {
    const first = await startRelayProcess();
    started.push(first);
    const account = await createAccount(first);
    const appId = (await createApp(first, account, ['signal'])).appId;
    const { secret } = await createKey(first, account, [appId]);
    // Something to deliver and something to poll across the kill.
    expect((await first.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550501', '--text', 'across the kill'])).code).toBe(0);
    await first.kill();

    const began = Date.now();
    // Same data directory: same store and, on Kafka, the same topic prefix (relay-process.ts).
    const second = await startRelayProcess({ dataDir: first.dataDir, waitFor: 'port' });
    started.push(second);
    const firstAnswer = await waitFor(async () => {
      try {
        const res = await fetch(`${second.url}/api/v1/health`);
        return { status: res.status, body: (await res.json()) as { status: string }, at: Date.now() - began };
      } catch {
        return undefined;
      }
    }, 30_000, 'the first HTTP answer');
    console.info(`restart on Kafka: first HTTP answer ${firstAnswer.at} ms after the start, ${firstAnswer.status} ${firstAnswer.body.status}`);
    // Node, the build and the stores take about a second here; before, the port stayed closed ~10 s.
    expect(firstAnswer.at).toBeLessThan(5_000);
    expect([200, 503]).toContain(firstAnswer.status);
    if (firstAnswer.status === 503) expect(firstAnswer.body.status).toBe('starting');
    await waitFor(async () => (await fetch(`${second.url}/api/v1/health`)).status === 200, 30_000, 'health 200');

    const sent = await api(second, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550502', message: 'after the kill' }] } });
    expect(sent.status).toBe(202);
    const messageId = sent.body.successfulMessages[0].messageId as string;
    await waitFor(async () => (await outbox(second, messageId)).some((d) => d.ok), 30_000, 'the delivery after the restart');
    const polled = await waitFor(async () => {
      const res = await api(second, 'GET', '/messages/poll', { key: secret });
      return res.body?.count > 0 ? res : undefined;
    }, 30_000, 'the inbound message');
    expect(polled.body.messages.map((m: { content: string }) => m.content)).toEqual(['across the kill']);
  });
});
