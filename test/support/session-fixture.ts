import type { ConnectorFixture, HandedToMessenger } from '../contracts/messenger-connector.contract.ts';
import { MemorySessionIdentityStore } from '../../infra/messenger/session/identity-store.ts';
import { SessionConnector } from '../../infra/messenger/session/session-connector.ts';
import { FakeSessionSwarm } from './fake-session-swarm.ts';
import { SessionTestClient, type TestClientMessage } from './session-test-client.ts';
import { fakeSwarmStorage } from './fake-swarm-storage.ts';

/** Nodes a deliver tries before it gives up (the fixture's transient failure covers them all). */
const ATTEMPTS = 3;

export interface SessionFixture extends ConnectorFixture {
  readonly connector: SessionConnector;
  readonly swarm: FakeSessionSwarm;
  readonly clients: readonly [SessionTestClient, SessionTestClient];
}

/**
 * The Session connector on the fake swarm (test/support/fake-session-swarm.ts), with two contacts
 * that are independent test clients (test/support/session-test-client.ts). Session groups are not
 * supported: `groupId` names no group, and a group delivery fails permanently.
 */
export const sessionFixture = async (): Promise<SessionFixture> => {
  const swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 3 });
  const access = { seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed };
  const clients = [SessionTestClient.random(access), SessionTestClient.random(access)] as const;
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const connector = new SessionConnector({
    storage: fakeSwarmStorage(swarm, { maxAttempts: ATTEMPTS }),
    identities: new MemorySessionIdentityStore(),
    log: quiet,
    poll: { minMs: 50, maxMs: 200 },
  });
  const from = await connector.provision('app-messenger-1');
  const received: { message: TestClientMessage; contactId: string }[] = [];
  return {
    connector,
    swarm,
    clients,
    messenger: 'session',
    from,
    contacts: [clients[0].sessionId, clients[1].sessionId],
    groupId: `03${'0'.repeat(64)}`,
    failNext(contactId, kind) {
      if (kind === 'transient') swarm.failNextStores(contactId, 503, 'Service node is not ready: not in any swarm', ATTEMPTS);
      else swarm.failNextStores(contactId, 400, 'invalid request: Message body exceeds maximum allowed length of 76800 bytes', 1);
    },
    async handed(): Promise<HandedToMessenger[]> {
      for (const client of clients) for (const message of await client.receive()) received.push({ message, contactId: client.sessionId });
      return [...received]
        .sort((a, b) => a.message.envelopeTimestamp - b.message.envelopeTimestamp)
        .map(({ message, contactId }) => ({ from: message.sender, contactId, text: message.text }));
    },
    async contactWrites({ contactId, text, groupId }) {
      if (groupId !== undefined) throw new Error('Session groups are not supported by Relay');
      const client = clients.find((c) => c.sessionId === contactId);
      if (!client) throw new Error('not a contact of the fixture');
      await client.send(from, text);
    },
    async teardown() {
      await connector.close();
      await swarm.close();
    },
  };
};
