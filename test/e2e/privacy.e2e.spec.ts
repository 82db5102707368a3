import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/**
 * Message privacy at rest (docs/privacy.md): bodies and contact ids never reach Relay's files in
 * clear, and once a message is done its key is destroyed with a record of when.
 */
const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) {
    await relay.stop();
    await relay.cleanup();
  }
});

const unique = (label: string) => `${label}-${randomBytes(6).toString('hex')}`;
const digits = () => String(Math.floor(1e9 + Math.random() * 8e9));

/** Every file of DATA_DIR but the simulator's (it stands for the recipients' phones: docs/privacy.md). */
const relayFiles = (dataDir: string): string[] => fs.readdirSync(dataDir).filter((name) => !name.startsWith('simulator.db')).map((name) => path.join(dataDir, name));

/** Files (and the process output) that hold any of the needles, as UTF-8 or UTF-16 bytes. */
const holding = (relay: RelayProcess, needles: string[]): string[] => {
  const found: string[] = [];
  for (const file of relayFiles(relay.dataDir)) {
    const bytes = fs.readFileSync(file);
    for (const needle of needles)
      if (bytes.includes(Buffer.from(needle, 'utf8')) || bytes.includes(Buffer.from(needle, 'utf16le'))) found.push(`${path.basename(file)}: ${needle}`);
  }
  for (const needle of needles) if (relay.output().includes(needle)) found.push(`output: ${needle}`);
  return found;
};

const forgotten = async (relay: RelayProcess) => {
  const result = await relay.cli(['events', '--type', 'BodiesForgotten']);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{"id"'))
    .map((line) => JSON.parse(line) as { type: string; streamName: string; data: { shredId: string; keys: Array<{ keyId: string; appId: string; subject: string; reason: string }> } })
    .filter((event) => event.type === 'BodiesForgotten')
    // One record per key destroyed, with the stream of the sweep that destroyed it.
    .flatMap((event) => event.data.keys.map((key) => ({ streamName: event.streamName, shredId: event.data.shredId, data: key })));
};

describe('message privacy at rest', () => {
  it('no body and no contact id in clear in any store file or log, in flight, after delivery and after a poll; every key forgotten with a record', async () => {
    const relay = await startRelayProcess({ env: { LOG_LEVEL: 'debug', BODY_SHRED_INTERVAL_MS: '50' } });
    started.push(relay);
    const account = await createAccount(relay);
    const appId = (await createApp(relay, account, ['signal'])).appId;
    const { secret } = await createKey(relay, account, [appId]);
    const outBody = unique('outbound body');
    const outContact = `+1${digits()}`;
    const inBody = unique('inbound body');
    const inContact = `+1${digits()}`;
    const group = unique('group');
    const needles = [outBody, outContact, inBody, inContact, group];

    const sent = await api(relay, 'POST', '/messages/send', {
      key: secret,
      body: { messages: [{ appId, messenger: 'signal', contactId: outContact, message: outBody, groupId: group }] },
    });
    expect(sent.status).toBe(202);
    const messageId = sent.body.successfulMessages[0].messageId as string;
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', inContact, '--text', inBody])).code).toBe(0);

    // Delivered: the simulator (the recipient's side) got the text; Relay's files hold none of it.
    const simulator = new SimulatorStore(relay.dataDir);
    const delivery = await waitFor(() => simulator.deliveries({ messageId })[0], 15_000, 'the delivery').finally(() => simulator.close());
    expect(delivery).toMatchObject({ contactId: outContact, text: outBody, groupId: group, ok: true });
    expect(holding(relay, needles)).toEqual([]);

    // Polled: the client gets it whole (once the pipeline queued it); still nothing in Relay's files.
    const polled = await waitFor(async () => {
      const res = await api(relay, 'GET', '/messages/poll', { key: secret });
      expect(res.status).toBe(200);
      return res.body.messages.length > 0 ? res : undefined;
    }, 15_000, 'the inbound message pollable');
    expect(polled.body.messages).toEqual([expect.objectContaining({ contactId: inContact, content: inBody, appId, messenger: 'signal' })]);
    expect(holding(relay, needles)).toEqual([]);

    // Both keys are destroyed, each with its record: the outbound one when delivered, the inbound one when polled.
    const records = await waitFor(async () => {
      const list = await forgotten(relay);
      return list.length >= 2 ? list : undefined;
    }, 10_000, 'both keys forgotten');
    expect(records.map((r) => r.data.reason).sort()).toEqual(['finished', 'finished']);
    expect(records.map((r) => r.data.subject.split('-')[0]).sort()).toEqual(['inbound', 'sendbatch']);
    const accepted = JSON.parse((await relay.cli(['events', '--type', 'MessagesAccepted'])).stdout.split('\n').filter((l) => l.startsWith('{"id"')).at(-1)!);
    expect(records.map((r) => r.data.keyId)).toContain(accepted.data.messages[0].keyId);
    expect(records.every((r) => r.streamName === `shred-${r.shredId}` && r.data.appId === appId)).toBe(true);

    // After a stop (WAL checkpointed) the files hold none of it either.
    expect(await relay.stop()).toBe(0);
    expect(holding(relay, needles)).toEqual([]);
  });

  it('an inbound message nobody polls within the retention is forgotten, and a poll then returns nothing', async () => {
    const relay = await startRelayProcess({ env: { MESSAGE_RETENTION_HOURS: String(1.5 / 3600), BODY_SHRED_INTERVAL_MS: '50' } });
    started.push(relay);
    const account = await createAccount(relay);
    const appId = (await createApp(relay, account, ['signal'])).appId;
    const { secret } = await createKey(relay, account, [appId]);
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550401', '--text', 'too late'])).code).toBe(0);
    const record = await waitFor(async () => (await forgotten(relay)).find((r) => r.data.reason === 'retention'), 15_000, 'the retention');
    expect(record.data).toMatchObject({ appId, subject: expect.stringMatching(/^inbound-/) });
    const polled = await api(relay, 'GET', '/messages/poll', { key: secret });
    expect(polled).toMatchObject({ status: 200, body: { messages: [], count: 0 } });
  });

  it('an outbound message whose retention passes before its next attempt is abandoned, saying so', async () => {
    const relay = await startRelayProcess({ env: { MESSAGE_RETENTION_HOURS: String(1.5 / 3600), BODY_SHRED_INTERVAL_MS: '50', DELIVERY_BACKOFF_BASE_MS: '4000' } });
    started.push(relay);
    const account = await createAccount(relay);
    const appId = (await createApp(relay, account, ['signal'])).appId;
    const { secret } = await createKey(relay, account, [appId]);
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550402', '--times', '1'])).code).toBe(0);
    const sent = await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550402', message: 'retry me' }] } });
    const messageId = sent.body.successfulMessages[0].messageId as string;
    const abandoned = await waitFor(async () => {
      const lines = (await relay.cli(['events', '--stream', `outbound-${messageId}`])).stdout.split('\n').filter((l) => l.startsWith('{"id"'));
      return lines.map((line) => JSON.parse(line)).find((e: { type: string }) => e.type === 'MessageAbandoned');
    }, 20_000, 'the abandonment');
    expect(abandoned.data).toMatchObject({ messageId, attempts: 2, reason: 'Message body forgotten before delivery (retention or app deleted)' });
    expect((await forgotten(relay)).some((r) => r.data.reason === 'retention' && r.data.subject.startsWith('sendbatch-'))).toBe(true);
  });

  it('deleting an app forgets the bodies of its messages still queued, and drops its queue', async () => {
    const relay = await startRelayProcess({ env: { BODY_SHRED_INTERVAL_MS: '50' } });
    started.push(relay);
    const account = await createAccount(relay);
    const appId = (await createApp(relay, account, ['signal'])).appId;
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550403', '--text', 'unread', '--count', '3'])).code).toBe(0);
    expect((await dashboard(relay, account, 'DELETE', `/apps/${appId}`)).status).toBe(200);
    const received = (await relay.cli(['events', '--type', 'InboundMessageReceived'])).stdout
      .split('\n')
      .filter((line) => line.startsWith('{"id"'))
      .map((line) => JSON.parse(line) as { data: { appId: string; keyId: string } })
      .filter((event) => event.data.appId === appId);
    expect(received).toHaveLength(3);
    const keyIds = [...new Set(received.map((event) => event.data.keyId))];
    const records = await waitFor(async () => {
      const list = (await forgotten(relay)).filter((r) => keyIds.includes(r.data.keyId));
      return list.length === keyIds.length ? list : undefined;
    }, 10_000, 'the app’s keys forgotten');
    expect(records.every((r) => r.data.reason === 'app deleted' && r.data.appId === appId)).toBe(true);
  });
});
