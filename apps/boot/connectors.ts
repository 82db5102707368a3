import type { Logger } from 'pino';
import { MESSENGERS, type Messenger } from '../../domain/shared/messengers.ts';
import type { MessengerConnector } from '../../infra/messenger/port.ts';
import { HttpSignalRpc } from '../../infra/messenger/signal/http-signal-rpc.ts';
import { SignalConnector } from '../../infra/messenger/signal/signal-connector.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { TcpSignalRpc } from '../../infra/messenger/signal/tcp-signal-rpc.ts';
import { SimplexConnector } from '../../infra/messenger/simplex/simplex-connector.ts';
import { SimulatorConnector } from '../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { ConfigError, type Config } from './config.ts';

export interface Connectors {
  readonly byMessenger: ReadonlyMap<Messenger, MessengerConnector>;
  close(): Promise<void>;
}

/** signal-cli's JSON-RPC over the transport SIGNAL_CLI_URL names (http:// or tcp://). */
export const signalRpcOf = (config: Pick<Config, 'SIGNAL_CLI_URL' | 'SIGNAL_CLI_TIMEOUT_MS' | 'SIGNAL_CLI_RECEIVE_MODE' | 'SIGNAL_CLI_ACCOUNT_WATCH_MS'>, log: Logger): SignalRpc => {
  const url = new URL(config.SIGNAL_CLI_URL!);
  const onMalformed = (reason: string) => log.warn({ component: 'signal' }, reason);
  const timeoutMs = config.SIGNAL_CLI_TIMEOUT_MS;
  if (url.protocol === 'tcp:') return new TcpSignalRpc({ host: url.hostname, port: Number(url.port), timeoutMs, onMalformed, subscribe: config.SIGNAL_CLI_RECEIVE_MODE === 'manual', accountWatchMs: config.SIGNAL_CLI_ACCOUNT_WATCH_MS });
  if (config.SIGNAL_CLI_RECEIVE_MODE === 'manual') throw new ConfigError('Invalid configuration SIGNAL_CLI_RECEIVE_MODE: manual needs the TCP transport (SIGNAL_CLI_URL=tcp://HOST:PORT)');
  return new HttpSignalRpc({ url: url.origin, timeoutMs, onMalformed, accountWatchMs: config.SIGNAL_CLI_ACCOUNT_WATCH_MS });
};

/**
 * One connector per messenger: the daemon's when one is configured, else the simulator. Signal
 * runs on signal-cli (SIGNAL_CLI_URL), SimpleX on simplex-chat (SIMPLEX_WS_URL); the Session
 * connector comes with later work, so configuring its daemon stops start-up with a clear line.
 */
export const openConnectors = (config: Config, log: Logger): Connectors => {
  if (config.SESSION_CLIENT_URL) throw new ConfigError('Invalid configuration SESSION_CLIENT_URL: the session daemon connector is not available in this version');
  const store = new SimulatorStore(config.dataDir);
  const byMessenger = new Map<Messenger, MessengerConnector>();
  for (const messenger of MESSENGERS) {
    if (messenger === 'signal' && config.SIGNAL_CLI_URL) {
      byMessenger.set(messenger, new SignalConnector({ rpc: signalRpcOf(config, log), log: log.child({ component: 'signal' }) }));
    } else if (messenger === 'simplex' && config.SIMPLEX_WS_URL) {
      byMessenger.set(messenger, new SimplexConnector({ url: config.SIMPLEX_WS_URL, timeoutMs: config.SIMPLEX_TIMEOUT_MS, log: log.child({ component: 'simplex' }) }));
    } else {
      byMessenger.set(messenger, new SimulatorConnector(messenger, store));
    }
  }
  return {
    byMessenger,
    close: async () => {
      await Promise.all([...byMessenger.values()].map((c) => c.close()));
      store.close();
    },
  };
};
