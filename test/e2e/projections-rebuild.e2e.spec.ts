import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type CliResult, type RelayProcess } from '../support/relay-process.ts';
import { readSnapshotFile, writeSnapshotFile } from '../support/read-model-snapshot-file.ts';

let relay: RelayProcess | undefined;
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

const ok = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result;
};

/** Waits until every app-messenger of the app has its bot identity. */
const provisioned = (relay: RelayProcess, account: Account, appId: string) =>
  waitFor(
    async () => {
      const list = await dashboard(relay, account, 'GET', '/apps');
      const app = (list.body.items as any[]).find((a) => a.id === appId);
      return app.messengers.every((m: any) => m.address !== null) ? app : undefined;
    },
    10_000,
    `app-messengers of ${appId} provisioned`,
  );

const rebuild = async (relay: RelayProcess, ...flags: string[]) => {
  const result = await relay.cli(['projections', 'rebuild', '--json', ...flags]);
  return { ...result, report: result.stdout ? JSON.parse(result.stdout) : undefined };
};

const none = { count: 0, items: [] };

describe('relay projections rebuild', () => {
  it('projection rebuild equals live state after a mixed workload; a tampered snapshot is named, --replace repairs it', { timeout: 180_000 }, async () => {
    relay = await startRelayProcess();
    const email = 'auditor@example.com';
    const account = await createAccount(relay, email);

    // Apps: three created, one updated, one given another messenger, one app-messenger disabled, one deleted.
    const support = await createApp(relay, account, ['signal', 'simplex', 'session'], 'Support bot');
    const billing = await createApp(relay, account, ['signal'], 'Billing bot');
    const doomedApp = await createApp(relay, account, ['simplex'], 'Doomed bot');
    const renamed = await dashboard(relay, account, 'POST', '/apps/update', { appId: support.appId, name: 'Support bot v2', deliveryType: 'poll' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect((await dashboard(relay, account, 'POST', '/apps/update', { appId: billing.appId, protocol: ['signal', 'session'] })).status).toBe(200);
    expect((await provisioned(relay, account, billing.appId)).messengers).toHaveLength(2);
    const sessionMessenger = support.messengers.find((m) => m.messenger === 'session')!;
    const disabled = await dashboard(relay, account, 'PUT', `/app-messengers/${sessionMessenger.id}`, { status: 'disabled' });
    expect(disabled.body).toMatchObject({ id: sessionMessenger.id, status: 'disabled' });

    // Credentials of all three types, and one deleted.
    const apiKey = await createKey(relay, account, [support.appId, billing.appId]);
    const bearer = await createKey(relay, account, [support.appId], 'webhook-bearer', { webhookUrl: 'https://hooks.example.com/in' });
    const header = await createKey(relay, account, [billing.appId], 'webhook-header', {
      webhookUrl: 'https://hooks.example.com/in',
      webhookAuthHeaderName: 'X-Relay-Token',
    });
    const doomedKey = await createKey(relay, account, [support.appId]);
    expect((await dashboard(relay, account, 'DELETE', `/credentials/${doomedKey.credentialId}`)).status).toBe(200);
    expect((await dashboard(relay, account, 'DELETE', `/apps/${doomedApp.appId}`)).status).toBe(200);

    ok(await relay.cli(['user', 'tier', '--email', email, '--tier', 'paid']));

    // Messages out and in.
    const sent = await api(relay, 'POST', '/messages/send', {
      key: apiKey.secret,
      body: {
        messages: [
          { appId: support.appId, messenger: 'signal', contactId: '+15550101', message: 'one' },
          { appId: support.appId, messenger: 'simplex', contactId: '42', message: 'two' },
          { appId: billing.appId, messenger: 'signal', contactId: '+15550102', message: 'three' },
        ],
      },
    });
    expect(sent.status).toBe(202);
    expect(sent.body.totalAccepted).toBe(3);
    ok(await relay.cli(['simulate', 'inbound', '--app', support.appId, '--messenger', 'signal', '--contact', '+15550103', '--text', 'hello relay']));
    const polled = await waitFor(async () => {
      const res = await api(relay!, 'GET', '/messages/poll', { key: apiKey.secret });
      return res.body.count > 0 ? res.body.messages : undefined;
    });
    expect(polled.map((m: { content: string }) => m.content)).toEqual(['hello relay']);

    // A graceful stop writes the live read models' snapshot.
    expect(await relay.stop()).toBe(0);
    const snapshotFile = path.join(relay.dataDir, `read-models.${relay.env.EVENT_STORE ?? 'sqlite'}.json`);
    const written = readSnapshotFile(snapshotFile);
    // The snapshot holds the workload (so the comparison below is not between two empty models).
    const apps = new Map((written.models.apps as any[]).map((a) => [a.id, a]));
    expect([...apps.keys()].sort()).toEqual([support.appId, billing.appId].sort());
    expect(apps.get(support.appId).settings.name).toBe('Support bot v2');
    expect(apps.get(support.appId).messengers.find((m: any) => m.id === sessionMessenger.id).status).toBe('disabled');
    expect(apps.get(billing.appId).messengers.map((m: any) => m.messenger).sort()).toEqual(['session', 'signal']);
    expect(written.models.users.users.map((u: any) => u.tier)).toEqual(['paid']);
    expect((written.models.credentials as any[]).map((c) => c.credentialId).sort()).toEqual(
      [apiKey.credentialId, bearer.credentialId, header.credentialId].sort(),
    );

    // The snapshot is at the last event of the read models' categories.
    const history = ok(await relay.cli(['events', '--category', 'user', '--category', 'app', '--category', 'credential']));
    const last = JSON.parse(history.stdout.trim().split('\n').at(-1)!) as { globalPosition: string; id: string };
    expect(written.position).toBe(last.globalPosition);

    const equalModels = [
      { name: 'users', equal: true, live: { users: 1, sessions: 1, contacts: 0 }, rebuilt: { users: 1, sessions: 1, contacts: 0 }, missingInLive: none, extraInLive: none, different: none },
      { name: 'apps', equal: true, live: { apps: 2 }, rebuilt: { apps: 2 }, missingInLive: none, extraInLive: none, different: none },
      { name: 'credentials', equal: true, live: { credentials: 3 }, rebuilt: { credentials: 3 }, missingInLive: none, extraInLive: none, different: none },
      { name: 'groups', equal: true, live: { groups: 0 }, rebuilt: { groups: 0 }, missingInLive: none, extraInLive: none, different: none },
      { name: 'invoices', equal: true, live: { invoices: 0 }, rebuilt: { invoices: 0 }, missingInLive: none, extraInLive: none, different: none },
    ];
    const first = await rebuild(relay);
    expect(first.code, first.stderr).toBe(0);
    expect(first.report).toEqual({
      equal: true,
      head: expect.stringMatching(/^\d+$/),
      snapshot: { file: snapshotFile, usable: true, position: last.globalPosition },
      models: equalModels,
    });
    expect(BigInt(first.report.head)).toBeGreaterThanOrEqual(BigInt(last.globalPosition));

    // Tampered: one credential gone, one app renamed.
    const tampered = structuredClone(written);
    tampered.models.credentials = tampered.models.credentials.filter((c: any) => c.credentialId !== header.credentialId);
    tampered.models.apps.find((a: any) => a.id === billing.appId).settings.name = 'Tampered';
    writeSnapshotFile(snapshotFile, tampered);

    const caught = await rebuild(relay);
    expect(caught.code).toBe(1);
    expect(caught.stderr).toContain('the live read models differ from their rebuild from event 0: apps, credentials');
    expect(caught.report.equal).toBe(false);
    expect(caught.report.models).toEqual([
      equalModels[0],
      { ...equalModels[1], equal: false, different: { count: 1, items: [{ id: billing.appId, fields: ['settings.name'] }] } },
      { ...equalModels[2], equal: false, live: { credentials: 2 }, missingInLive: { count: 1, items: [header.credentialId] } },
      equalModels[3],
      equalModels[4],
    ]);

    const readable = await relay.cli(['projections', 'rebuild']);
    expect(readable.code).toBe(1);
    expect(readable.stdout.trim().split('\n').slice(2)).toEqual([
      'users: equal (1 user, 1 session, 0 contacts)',
      `apps: DIFFERENT — 1 different: ${billing.appId} (settings.name) [live: 2 apps; rebuilt: 2 apps]`,
      `credentials: DIFFERENT — 1 missing in live: ${header.credentialId} [live: 2 credentials; rebuilt: 3 credentials]`,
      'groups: equal (0 groups)',
      'invoices: equal (0 invoices)',
    ]);

    // --replace reports what it found, then writes the rebuilt read models at the last event of their categories.
    const replaced = await rebuild(relay, '--replace');
    expect(replaced.code).toBe(1);
    expect(replaced.stderr).toContain('warning: --replace overwrites the read-model snapshot: stop Relay first');
    expect(replaced.report.replaced).toEqual({ position: last.globalPosition, eventId: last.id });
    const rewritten = readSnapshotFile(snapshotFile);
    expect([rewritten.position, rewritten.eventId]).toEqual([last.globalPosition, last.id]);

    const repaired = await rebuild(relay);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.report.models).toEqual(equalModels);
    expect(repaired.report.snapshot.usable).toBe(true);

    // Events after the snapshot are applied to it, as at a start: the tier goes back to free after
    // the snapshot was taken (the CLI writes its own snapshot on exit: the older one is put back).
    const before = fs.readFileSync(snapshotFile);
    ok(await relay.cli(['user', 'tier', '--email', email, '--tier', 'free']));
    fs.writeFileSync(snapshotFile, before);
    const behind = await rebuild(relay);
    expect(behind.code, behind.stderr).toBe(0);
    expect(behind.report.snapshot.position).toBe(last.globalPosition);
    expect(BigInt(behind.report.head)).toBeGreaterThan(BigInt(last.globalPosition));
    expect(behind.report.models).toEqual(equalModels);

    // Without a snapshot, the live read models are a replay too: equal, and the report says so.
    fs.rmSync(snapshotFile);
    const bare = await rebuild(relay);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.report.snapshot).toEqual({
      file: snapshotFile,
      usable: false,
      found: false,
      note: 'no usable snapshot: the live read models are built from event 0 too',
    });
    expect(bare.report.models).toEqual(equalModels);
    expect(fs.existsSync(snapshotFile)).toBe(false);
  });
});
