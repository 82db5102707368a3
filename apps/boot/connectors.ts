import fs from 'node:fs';
import type { Logger } from 'pino';
import { MESSENGERS, type Messenger } from '../../domain/shared/messengers.ts';
import type { SecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { MessengerConnector } from '../../infra/messenger/port.ts';
import { SessionConnector, type SkippedKind } from '../../infra/messenger/session/session-connector.ts';
import type { RelayMetrics } from '../services/metrics.ts';
import { DEFAULT_SEED_NODES } from '../../infra/messenger/session/storage-client.ts';
import { SignalConnector } from '../../infra/messenger/signal/signal-connector.ts';
import { SimplexConnector } from '../../infra/messenger/simplex/simplex-connector.ts';
import { SimulatorConnector } from '../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { ConfigError, type Config } from '../services/config.ts';
import { EventSessionIdentityStore } from './session-identities.ts';
import { signalRpcOf } from '../services/signal-rpc.ts';

export interface Connectors {
  readonly byMessenger: ReadonlyMap<Messenger, MessengerConnector>;
  close(): Promise<void>;
}

/** What the connectors need of the shared context: the history and the secret box (Session's seeds live there, sealed). */
export interface ConnectorDeps {
  readonly store: EventStore;
  readonly secrets: SecretBox;
  /** Where Session's skipped inbound messages are counted, in a process that serves metrics. */
  readonly metrics?: Pick<RelayMetrics, 'sessionInboundSkipped'>;
}

type SessionConfig = Pick<
  Config,
  'SESSION_SEED_NODES' | 'SESSION_SEED_CA' | 'SESSION_TIMEOUT_MS' | 'SESSION_POLL_MIN_MS' | 'SESSION_POLL_MAX_MS' | 'SESSION_TRANSPORT' | 'SESSION_ALLOW_PRIVATE_NODES' | 'SESSION_POOL_AGREEMENT'
>;

/**
 * Relay's own Session client (SESSION_NETWORK=on): the seed nodes (the real ones unless
 * SESSION_SEED_NODES), their certificate when SESSION_SEED_CA names one, and the bots' seeds in the
 * event history. `actor` signs the seeds it keeps (`system:gateway`, or `cli` for an import).
 */
export const sessionConnectorOf = (config: SessionConfig, deps: ConnectorDeps, log: Logger, actor = 'system:gateway'): SessionConnector => {
  let seedCa: Buffer | undefined;
  if (config.SESSION_SEED_CA !== undefined) {
    try {
      seedCa = fs.readFileSync(config.SESSION_SEED_CA);
    } catch {
      throw new ConfigError(`Invalid configuration SESSION_SEED_CA=${JSON.stringify(config.SESSION_SEED_CA.slice(0, 200))}: cannot be read (a PEM file of the seed nodes' certificate)`);
    }
    if (!seedCa.includes('-----BEGIN CERTIFICATE-----'))
      throw new ConfigError(`Invalid configuration SESSION_SEED_CA=${JSON.stringify(config.SESSION_SEED_CA.slice(0, 200))}: not a PEM certificate`);
  }
  const seedNodes = config.SESSION_SEED_NODES?.split(',').map((url) => url.trim()) ?? [...DEFAULT_SEED_NODES];
  // The real seeds' certificates are pinned; other seeds must bring theirs.
  if (!seedCa && seedNodes.some((url) => !DEFAULT_SEED_NODES.includes(url.replace(/\/$/, ''))))
    throw new ConfigError('Invalid configuration SESSION_SEED_NODES: seed nodes other than Session\'s own need SESSION_SEED_CA (a PEM file of their certificate)');
  return new SessionConnector({
    storage: {
      seedNodes,
      requestTimeoutMs: config.SESSION_TIMEOUT_MS,
      ...(seedCa ? { seedCa } : {}),
      transport: config.SESSION_TRANSPORT,
      allowPrivateAddresses: config.SESSION_ALLOW_PRIVATE_NODES,
      minAgreement: config.SESSION_POOL_AGREEMENT,
    },
    identities: new EventSessionIdentityStore(deps.store, deps.secrets, { actor, log }),
    log,
    poll: { minMs: config.SESSION_POLL_MIN_MS, maxMs: config.SESSION_POLL_MAX_MS },
    ...(deps.metrics ? { onSkipped: (kind: SkippedKind) => deps.metrics!.sessionInboundSkipped.inc({ kind }) } : {}),
  });
};

/** The connector as the pipeline sees it when an operator imports every identity: no provisioning (the app-messengers wait, as Signal's do for `bind`). */
const withoutProvisioning = (connector: SessionConnector): MessengerConnector => ({
  messenger: connector.messenger,
  deliver: (delivery) => connector.deliver(delivery),
  checkHealth: () => connector.checkHealth(),
  listen: (onInbound) => connector.listen(onInbound),
  close: () => connector.close(),
});

/**
 * One connector per messenger: the daemon's when one is configured, else the simulator. Signal
 * runs on signal-cli (SIGNAL_CLI_URL), SimpleX on simplex-chat (SIMPLEX_WS_URL), Session on
 * Relay's own client of the Session network when SESSION_NETWORK=on. There is no Session daemon:
 * a configuration naming one (SESSION_CLIENT_URL) stops start-up with a clear line.
 */
export const openConnectors = (config: Config, log: Logger, deps: ConnectorDeps): Connectors => {
  if (config.SESSION_CLIENT_URL) throw new ConfigError('Invalid configuration SESSION_CLIENT_URL: the session daemon connector is not available in this version');
  const store = new SimulatorStore(config.dataDir);
  const byMessenger = new Map<Messenger, MessengerConnector>();
  try {
    for (const messenger of MESSENGERS) {
      if (messenger === 'signal' && config.SIGNAL_CLI_URL) {
        byMessenger.set(messenger, new SignalConnector({ rpc: signalRpcOf(config, log), log: log.child({ component: 'signal' }) }));
      } else if (messenger === 'simplex' && config.SIMPLEX_WS_URL) {
        byMessenger.set(messenger, new SimplexConnector({ url: config.SIMPLEX_WS_URL, timeoutMs: config.SIMPLEX_TIMEOUT_MS, log: log.child({ component: 'simplex' }) }));
      } else if (messenger === 'session' && config.SESSION_NETWORK === 'on') {
        const connector = sessionConnectorOf(config, deps, log);
        byMessenger.set(messenger, config.SESSION_IDENTITIES === 'import' ? withoutProvisioning(connector) : connector);
      } else {
        byMessenger.set(messenger, new SimulatorConnector(messenger, store));
      }
    }
  } catch (error) {
    for (const connector of byMessenger.values()) void connector.close().catch(() => undefined);
    store.close();
    throw error;
  }
  return {
    byMessenger,
    close: async () => {
      await Promise.all([...byMessenger.values()].map((c) => c.close()));
      store.close();
    },
  };
};
