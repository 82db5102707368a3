import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, waitFor } from '../support/account-fixture.ts';
import { runCli, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

// Outgrowing the embedded default: a Relay that ran on SQLite moves to PostgreSQL with
// `relay events copy`, and carries on there where it stopped; then the history comes back.
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `relay_copy_e2e_${randomBytes(4).toString('hex')}`;
const started: RelayProcess[] = [];
const extraDirs: string[] = [];

afterAll(async () => {
  for (const relay of started) await relay.stop();
  await started[0]?.cleanup();
  for (const dir of extraDirs) fs.rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

/** `relay events` of a store, as auditors read it, without the store's own position numbers. */
const historyOf = async (env: Record<string, string>) => {
  const result = await runCli(['events'], env);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const { globalPosition: _, ...event } = JSON.parse(line) as Record<string, unknown>;
      return event;
    });
};

describe('relay events copy', () => {
  it('moves a Relay from SQLite to PostgreSQL: same history, keys, pending inbound, no message delivered again; and back', async () => {
    const env = { DELIVERY_BACKOFF_BASE_MS: '100' };
    const onSqlite = await startRelayProcess({ env: { ...env, EVENT_STORE: 'sqlite', BROKER: 'embedded' } });
    started.push(onSqlite);
    const account = await createAccount(onSqlite);
    const { appId } = await createApp(onSqlite, account);
    const { secret: key } = await createKey(onSqlite, account, [appId]);
    const sent = await api(onSqlite, 'POST', '/messages/send', {
      key,
      body: { messages: Array.from({ length: 5 }, (_, i) => ({ appId, messenger: 'signal', contactId: '+15550101', message: `before ${i}` })) },
    });
    expect(sent.status).toBe(202);
    const simulator = new SimulatorStore(onSqlite.dataDir);
    try {
      await waitFor(() => (simulator.deliveries().filter((d) => d.ok).length === 5 ? true : undefined), 10_000, '5 deliveries');
      for (let i = 0; i < 3; i++) {
        const r = await onSqlite.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550102', '--text', `waiting ${i}`]);
        expect(r.code, r.stderr).toBe(0);
      }
      expect(await onSqlite.stop()).toBe(0);
      const sqliteHistory = await historyOf(onSqlite.env);

      // Copy into PostgreSQL.
      const to = `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}schema=${schema}`;
      const copy = await onSqlite.cli(['events', 'copy', '--to', to]);
      expect(copy.code, copy.stderr).toBe(0);
      const report = JSON.parse(copy.stdout) as Record<string, unknown>;
      expect(report).toMatchObject({ copied: sqliteHistory.length, skipped: 0, sourceEvents: sqliteHistory.length, targetEvents: sqliteHistory.length, verified: true });
      // Checkpoints go along, translated (both stores number densely here: the same numbers).
      const checkpoints = report.checkpoints as Record<string, { from: string; to: string }>;
      expect(Object.keys(checkpoints).sort()).toEqual(['provisioner', 'publisher']);
      expect(BigInt(checkpoints.publisher!.from)).toBeGreaterThan(0n);
      expect(checkpoints.publisher!.to).toBe(checkpoints.publisher!.from);
      expect(copy.stderr).toContain(`verified: ${sqliteHistory.length} events`);
      const pgEnv = { ...onSqlite.env, EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema };
      expect(await historyOf(pgEnv)).toEqual(sqliteHistory);

      // Copying again resumes and finds nothing to do; a copy onto the source itself is refused.
      const again = await onSqlite.cli(['events', 'copy', '--to', to]);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ copied: 0, skipped: 0, sourceEvents: sqliteHistory.length });
      const onto = await onSqlite.cli(['events', 'copy', '--to', `sqlite:${onSqlite.dataDir}`]);
      expect(onto).toMatchObject({ code: 1, stderr: 'relay: --to names the store copied from: give another store\n' });
      const bad = await onSqlite.cli(['events', 'copy', '--to', 'mysql://h/db']);
      expect(bad).toMatchObject({ code: 1, stderr: 'relay: Invalid store URL mysql://h/db: use sqlite:<file>, postgres://… or esdb://…\n' });

      // Relay on PostgreSQL, same data directory (the embedded broker and the simulator stay).
      const onPostgres = await startRelayProcess({ dataDir: onSqlite.dataDir, env: { ...env, EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema, BROKER: 'embedded' } });
      started.push(onPostgres);
      expect((await api(onPostgres, 'GET', '/auth/verify', { key })).status).toBe(200);
      const polled = await api(onPostgres, 'GET', '/messages/poll?limit=10', { key });
      expect(polled.status).toBe(200);
      expect(polled.body.messages.map((m: { content: string }) => m.content)).toEqual(['waiting 0', 'waiting 1', 'waiting 2']);
      const after = await api(onPostgres, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550101', message: 'after' }] } });
      expect(after.status).toBe(202);
      await waitFor(() => (simulator.deliveries().filter((d) => d.ok).length === 6 ? true : undefined), 10_000, 'the 6th delivery');
      await new Promise((r) => setTimeout(r, 500));
      // The five sent before the move went out once (the publisher resumed at its checkpoint; the
      // embedded broker would also drop a record published again, by its id).
      const texts = simulator.deliveries().filter((d) => d.ok).map((d) => d.text);
      expect(texts.sort()).toEqual(['after', 'before 0', 'before 1', 'before 2', 'before 3', 'before 4']);
      expect(await onPostgres.stop()).toBe(0);
    } finally {
      simulator.close();
    }

    // And back into a fresh SQLite file: the whole PostgreSQL history, equal.
    const backDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-copy-back-'));
    extraDirs.push(backDir);
    const pgEnv = { ...onSqlite.env, EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema };
    const back = await runCli(['events', 'copy', '--to', `sqlite:${backDir}`], pgEnv);
    expect(back.code, back.stderr).toBe(0);
    const pgHistory = await historyOf(pgEnv);
    expect(JSON.parse(back.stdout)).toMatchObject({ copied: pgHistory.length, sourceEvents: pgHistory.length, verified: true });
    expect(await historyOf({ ...onSqlite.env, EVENT_STORE: 'sqlite', DATA_DIR: backDir })).toEqual(pgHistory);
  });
});
