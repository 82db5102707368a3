import { afterAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, waitFor } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) await relay.stop();
  await started[0]?.cleanup();
});

describe('crash safety', () => {
  it('after SIGKILL nothing answered 202 and no received inbound message is lost', async () => {
    const env = { DELIVERY_BACKOFF_BASE_MS: '200' };
    const first = await startRelayProcess({ env });
    started.push(first);
    const account = await createAccount(first);
    const { appId } = await createApp(first, account);
    const { secret: key } = await createKey(first, account, [appId]);

    // Deliveries to this contact fail until cleared, so some messages are still pending at the kill.
    expect((await first.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550077', '--times', '-1'])).code).toBe(0);

    const injected: string[] = [];
    for (let i = 0; i < 4; i++) {
      const text = `inbound-${i}`;
      const r = await first.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550005', '--text', text]);
      expect(r.code, r.stderr).toBe(0);
      injected.push(text);
    }
    // One is polled before the crash: it must not come back.
    const early = await waitFor(async () => {
      const res = await api(first, 'GET', '/messages/poll?limit=1', { key });
      return res.body.count === 1 ? res.body.messages[0] : undefined;
    });

    const accepted: string[] = [];
    const sends = Array.from({ length: 20 }, (_, b) =>
      api(first, 'POST', '/messages/send', {
        key,
        body: {
          messages: Array.from({ length: 25 }, (_, i) => ({
            appId,
            messenger: 'signal',
            contactId: i % 5 === 0 ? '+15550077' : '+15550066',
            message: `batch ${b} message ${i}`,
          })),
        },
      }).then((res) => {
        expect(res.status, `${JSON.stringify(res.body)}\n${first.output()}`).toBe(202);
        accepted.push(...res.body.successfulMessages.map((m: { messageId: string }) => m.messageId));
      }),
    );
    await Promise.all(sends);
    await first.kill();
    expect(accepted).toHaveLength(500);

    // Let deliveries succeed from now on, and start again on the same data.
    expect((await first.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550077', '--times', '0'])).code).toBe(0);
    const second = await startRelayProcess({ dataDir: first.dataDir, env });
    started.push(second);

    const store = new SimulatorStore(first.dataDir);
    try {
      await waitFor(
        () => {
          const delivered = new Set(store.deliveries().filter((d) => d.ok).map((d) => d.messageId));
          return accepted.every((id) => delivered.has(id)) ? true : undefined;
        },
        30_000,
        'every accepted message delivered',
      ).catch((error: unknown) => {
        const delivered = new Set(store.deliveries().filter((d) => d.ok).map((d) => d.messageId));
        const missing = accepted.filter((id) => !delivered.has(id));
        throw new Error(`${String(error)}: ${missing.length} of ${accepted.length} missing, e.g. ${missing.slice(0, 3).join(' ')}\n${second.output().slice(-3000)}`);
      });
      const perMessage = new Map<string, number>();
      for (const d of store.deliveries()) if (d.ok) perMessage.set(d.messageId, (perMessage.get(d.messageId) ?? 0) + 1);
      // A delivery interrupted between the connector call and its event may happen twice, never more.
      expect(Math.max(...perMessage.values())).toBeLessThanOrEqual(2);
    } finally {
      store.close();
    }

    const polled: string[] = [];
    await waitFor(async () => {
      const res = await api(second, 'GET', '/messages/poll?limit=50', { key });
      polled.push(...res.body.messages.map((m: { content: string }) => m.content));
      return polled.length >= 3 ? true : undefined;
    });
    expect([...polled, early.content].sort()).toEqual(injected.sort());
    const after = await api(second, 'GET', '/messages/poll?limit=50', { key });
    expect(after.body.count).toBe(0);
  });
});
