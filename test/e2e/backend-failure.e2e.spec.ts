import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, waitFor } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let appId: string;
let key: string;

beforeAll(async () => {
  relay = await startRelayProcess();
  const account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'])).appId;
  key = (await createKey(relay, account, [appId])).secret;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

/** Another connection takes the write lock of a store file and keeps it past the busy timeout. */
const holdWriteLock = (file: string) => {
  const db = new Database(path.join(relay.dataDir, file));
  db.exec('BEGIN IMMEDIATE');
  return () => {
    db.exec('ROLLBACK');
    db.close();
  };
};

describe('a failing backend gets the interface’s 5xx and loses nothing', () => {
  it('send answers 503 while the event store cannot be written, and works again after', async () => {
    const release = holdWriteLock('events.db');
    let failed;
    try {
      failed = await api(relay, 'POST', '/messages/send', {
        key,
        body: { messages: [{ appId, messenger: 'signal', contactId: '+15550001', message: 'during the outage' }] },
      });
    } finally {
      release();
    }
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({ error: 'Failed to enqueue messages' });
    // The refused batch took no budget: the full 600 minus this one remain.
    const ok = await api(relay, 'POST', '/messages/send', {
      key,
      body: { messages: [{ appId, messenger: 'signal', contactId: '+15550001', message: 'after the outage' }] },
    });
    expect(ok.status).toBe(202);
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('599');
    const id = ok.body.successfulMessages[0].messageId as string;
    const simulator = new SimulatorStore(relay.dataDir);
    try {
      await waitFor(() => (simulator.deliveries({ messageId: id }).some((d) => d.ok) ? true : undefined), 20_000, 'delivery after the outage');
      expect(simulator.deliveries().map((d) => d.text)).not.toContain('during the outage');
    } finally {
      simulator.close();
    }
  });

  it('poll answers 503 while the broker cannot be written; the message is still there after', async () => {
    const injected = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550009', '--text', 'kept']);
    expect(injected.code, injected.stderr).toBe(0);
    const broker = new Database(path.join(relay.dataDir, 'broker.db'), { readonly: true });
    await waitFor(() => ((broker.prepare('SELECT count(*) AS n FROM records WHERE topic = ?').get(`inbound.${appId}`) as { n: number }).n > 0 ? true : undefined));
    broker.close();
    const release = holdWriteLock('broker.db');
    let failed;
    try {
      failed = await api(relay, 'GET', '/messages/poll', { key });
    } finally {
      release();
    }
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({ error: 'Failed to poll messages' });
    const after = await api(relay, 'GET', '/messages/poll', { key });
    expect(after.status).toBe(200);
    expect(after.body.messages.map((m: { content: string }) => m.content)).toEqual(['kept']);
    expect((await api(relay, 'GET', '/health')).status).toBe(200);
  });
});
