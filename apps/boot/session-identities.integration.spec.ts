import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { InboundFromContact } from '../../infra/messenger/port.ts';
import { SessionConnector } from '../../infra/messenger/session/session-connector.ts';
import { SessionIdentityTakenError } from '../../infra/messenger/session/session-errors.ts';
import { eventually } from '../../test/support/eventually.ts';
import { FakeSessionSwarm } from '../../test/support/fake-session-swarm.ts';
import { SessionTestClient } from '../../test/support/session-test-client.ts';
import { toPublicEvent } from '../history/public-event.ts';
import { EventSessionIdentityStore } from './session-identities.ts';
import { fakeSwarmStorage } from '../../test/support/fake-swarm-storage.ts';

// The bots' Session seeds in the event history, shared by every instance: two connectors on two
// connections to one SQLite history stand for two Relay instances (or an instance and the CLI).

const KEY = '11'.repeat(32);
const box = createSecretBox(KEY);
type Log = { info(object: object, message: string): void; warn(object: object, message: string): void; error(object: object, message: string): void };
const quiet: Log = { info: () => undefined, warn: () => undefined, error: () => undefined };
let swarm: FakeSessionSwarm;
let dir: string;
const opened: { stores: EventStore[]; connectors: SessionConnector[] } = { stores: [], connectors: [] };

const instance = (options: { key?: string; log?: Log } = {}) => {
  const store = createSqliteEventStore({ path: join(dir, 'events.db'), pollIntervalMs: 10 });
  opened.stores.push(store);
  const identities = new EventSessionIdentityStore(store, options.key ? createSecretBox(options.key) : box, { actor: 'system:gateway', log: options.log ?? quiet });
  const connector = new SessionConnector({
    storage: fakeSwarmStorage(swarm),
    identities,
    log: quiet,
    poll: { minMs: 30, maxMs: 100 },
  });
  opened.connectors.push(connector);
  return { store, identities, connector };
};

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 3 });
});
afterAll(async () => {
  await swarm?.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'session-identities-'));
});
afterEach(async () => {
  for (const connector of opened.connectors.splice(0)) await connector.close();
  for (const store of opened.stores.splice(0)) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Session identities in the event history', () => {
  it('keeps each seed once, sealed and bound to its app-messenger, withheld from the public history', async () => {
    const { store, identities, connector } = instance();
    const sessionId = await connector.importIdentity('am_1', '39038c8988db02c1af44e8c847bd9713');
    const { events } = await store.readStream('sessionidentity-am_1');
    expect(events.map((e) => ({ type: e.type, data: e.data, actor: e.metadata.actor }))).toEqual([
      {
        type: 'SessionIdentityKept',
        data: { appMessengerId: 'am_1', sessionId, secretEncrypted: expect.stringMatching(/^v1:/), origin: 'imported', keptAt: expect.any(String) },
        actor: 'system:gateway',
      },
    ]);
    expect(toPublicEvent(events[0]!).data).toEqual({ appMessengerId: 'am_1', sessionId, origin: 'imported', keptAt: expect.any(String) });
    expect(readFileSync(join(dir, 'events.db')).includes(Buffer.from('39038c8988db02c1af44e8c847bd9713'))).toBe(false);
    expect(readFileSync(join(dir, 'events.db')).includes(Buffer.from('39038c8988db02c1af44e8c847bd9713', 'hex'))).toBe(false);
    expect((await identities.seedOf('am_1'))?.toString('hex')).toBe('39038c8988db02c1af44e8c847bd9713');
    // The same seed again records nothing; the sealed seed does not open on another app-messenger's stream.
    expect(await connector.importIdentity('am_1', '39038c8988db02c1af44e8c847bd9713')).toBe(sessionId);
    expect((await store.readStream('sessionidentity-am_1')).events).toHaveLength(1);
    await store.appendToStream('sessionidentity-am_2', [{ type: 'SessionIdentityKept', data: { ...(events[0]!.data as object), appMessengerId: 'am_2' } }]);
    expect(await identities.seedOf('am_2')).toBeUndefined();
    expect([...(await identities.all()).keys()]).toEqual(['am_1']);
  });

  it('another instance finds an identity one instance provisioned: it sends as the bot and polls its swarm', async () => {
    const one = instance();
    const two = instance();
    const received: InboundFromContact[] = [];
    await two.connector.listen(async (message) => void received.push(message));
    const bot = await one.connector.provision('am_1');
    // Two asks the history when it does not hold the sender yet.
    const contact = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
    expect(await two.connector.deliver({ messageId: 'm-1', from: bot, contactId: contact.sessionId, text: 'from the other instance' })).toEqual({ ok: true });
    expect(await contact.waitForMessages(1)).toMatchObject([{ sender: bot, text: 'from the other instance' }]);
    await contact.send(bot, 'to whichever instance');
    await eventually(() => expect(received.map((m) => [m.to, m.text])).toEqual([[bot, 'to whichever instance']]), 10_000);
    expect(await two.connector.checkHealth()).toEqual({ reachable: true, identities: new Set([bot]) });
  });

  it('two instances provisioning one app-messenger at once end with one identity', async () => {
    const one = instance();
    const two = instance();
    const [a, b] = await Promise.all([one.connector.provision('am_1'), two.connector.provision('am_1')]);
    expect(a).toBe(b);
    expect((await one.store.readStream('sessionidentity-am_1')).events).toHaveLength(1);
    await expect(two.connector.importIdentity('am_1', '39038c8988db02c1af44e8c847bd9713')).rejects.toThrow(SessionIdentityTakenError);
  });

  it('a seed sealed with another RELAY_SECRET_KEY is reported without its seed and skipped', async () => {
    const one = instance();
    await one.connector.importIdentity('am_1', '39038c8988db02c1af44e8c847bd9713');
    const errors: unknown[] = [];
    const other = instance({ key: '22'.repeat(32), log: { ...quiet, error: (object: object) => void errors.push(object) } });
    expect(await other.connector.sessionIds()).toEqual([]);
    expect(errors).toEqual([{ component: 'session', appMessengerId: 'am_1', reason: expect.any(String) }]);
    expect(JSON.stringify(errors)).not.toContain('39038c8988db02c1af44e8c847bd9713');
  });
});
