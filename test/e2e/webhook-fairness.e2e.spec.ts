/**
 * Issue 23, item 2: one tenant's slow webhook receivers cannot stop webhook delivery for every
 * tenant. A receiver that answers 200 and then sends its body a byte a second is cut off at
 * WEBHOOK_TIMEOUT_MS (a deadline for the whole attempt, not an idle timeout) and backed off without
 * holding a slot, and one user's apps hold at most a quarter of the slots.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, dashboard, waitFor } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const TIMEOUT_MS = 2_000;

describe('webhook delivery under a hostile tenant', () => {
  let relay: RelayProcess;
  let dripping: http.Server;
  let honest: http.Server;
  /** When each POST reached the dripping receiver, by app (from the path). */
  const drips = new Map<string, number[]>();
  const arrived: Array<{ at: number; body: string }> = [];
  const open = new Set<http.ServerResponse>();
  let mostAtOnce = 0;

  const listen = async (server: http.Server) => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    dripping = http.createServer((req, res) => {
      const app = req.url!.slice(1);
      drips.set(app, [...(drips.get(app) ?? []), Date.now()]);
      req.resume();
      // 200 at once, then a byte a second, for ever.
      res.writeHead(200, { 'content-type': 'text/plain' });
      open.add(res);
      mostAtOnce = Math.max(mostAtOnce, open.size);
      const timer = setInterval(() => res.write('.'), 1000);
      res.on('close', () => (clearInterval(timer), open.delete(res)));
    });
    honest = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        arrived.push({ at: Date.now(), body });
        res.writeHead(204).end();
      });
    });
    relay = await startRelayProcess({
      env: { WEBHOOK_ALLOW_LOCAL: 'true', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_BACKOFF_BASE_MS: '500', WEBHOOK_BACKOFF_MAX_MS: '1000', WEBHOOK_IDLE_POLL_MS: '100', WEBHOOK_MAX_ATTEMPTS: '100' },
    });
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    for (const res of open) res.destroy();
    await Promise.all([dripping, honest].map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it("a tenant's 8 dripping receivers neither hold their slots past the deadline nor keep another tenant's message waiting", async () => {
    const drippingBase = await listen(dripping);
    const honestBase = await listen(honest);
    const hostile = await createAccount(relay);
    const hostileApps: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { appId } = await createApp(relay, hostile, ['signal'], `drip ${i}`);
      const updated = await dashboard(relay, hostile, 'POST', '/apps/update', { appId, deliveryType: 'webhook', webhookUrl: `${drippingBase}/${appId}` });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      hostileApps.push(appId);
    }
    const victim = await createAccount(relay);
    const { appId: victimApp } = await createApp(relay, victim, ['signal'], 'honest');
    expect((await dashboard(relay, victim, 'POST', '/apps/update', { appId: victimApp, deliveryType: 'webhook', webhookUrl: `${honestBase}/hook` })).status).toBe(200);

    for (const appId of hostileApps) {
      const r = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550100001', '--text', 'drip']);
      expect(r.code, r.stderr).toBe(0);
    }
    await waitFor(() => drips.size >= 2, 20_000, 'the dripping receivers to be called');
    const sentAt = Date.now();
    const r = await relay.cli(['simulate', 'inbound', '--app', victimApp, '--messenger', 'signal', '--contact', '+15550100002', '--text', 'honest message']);
    expect(r.code, r.stderr).toBe(0);
    const delivered = await waitFor(() => arrived.find((a) => JSON.parse(a.body).content === 'honest message'), 10_000, "the other tenant's message");
    console.info(`webhook fairness: the other tenant's message arrived ${delivered.at - sentAt} ms after the contact began to write it (the CLI's start included)`);
    // Before the fix it never arrived: the 8 dripping receivers held every slot for as long as they dripped.
    expect(delivered.at - sentAt).toBeLessThan(TIMEOUT_MS * 3);

    // Each dripping receiver is cut off at the deadline and called again after its backoff.
    const [first] = [...drips.keys()];
    const again = await waitFor(() => ((drips.get(first!)?.length ?? 0) >= 2 ? drips.get(first!) : undefined), TIMEOUT_MS * 4, 'a second attempt at a dripping receiver');
    expect(again[1]! - again[0]!).toBeGreaterThanOrEqual(TIMEOUT_MS);
    // All eight are served in turn, two at a time at most (a quarter of the 8 slots).
    await waitFor(() => drips.size === 8, TIMEOUT_MS * 8, 'every dripping app to be tried');
    expect(mostAtOnce).toBe(2);
  });
});
