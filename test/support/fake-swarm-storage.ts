import type { SessionStorageOptions } from '../../infra/messenger/session/storage-client.ts';
import type { FakeSessionSwarm } from './fake-session-swarm.ts';

/**
 * The storage-client options that point Relay's Session client at a fake swarm: its seed and the
 * seed's certificate (in place of the real seeds' pinned ones), node addresses on loopback allowed
 * (a real network's answers naming them are refused), and a pool agreement the few fake nodes can
 * give (a real pool refresh needs 24 nodes three sources agree on).
 */
export const fakeSwarmStorage = (swarm: FakeSessionSwarm, overrides: Partial<SessionStorageOptions> = {}): SessionStorageOptions => ({
  seedNodes: [swarm.seedUrl],
  seedCa: swarm.certificates.seed,
  allowPrivateAddresses: true,
  minPoolSize: 3,
  minAgreement: 3,
  requestTimeoutMs: 3_000,
  ...overrides,
});
