import type { Logger } from 'pino';
import { HttpSignalRpc } from '../../infra/messenger/signal/http-signal-rpc.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { TcpSignalRpc } from '../../infra/messenger/signal/tcp-signal-rpc.ts';
import { ConfigError, type Config } from './config.ts';

/** signal-cli's JSON-RPC over the transport SIGNAL_CLI_URL names (http:// or tcp://). */
export const signalRpcOf = (config: Pick<Config, 'SIGNAL_CLI_URL' | 'SIGNAL_CLI_TIMEOUT_MS' | 'SIGNAL_CLI_RECEIVE_MODE' | 'SIGNAL_CLI_ACCOUNT_WATCH_MS'>, log: Logger): SignalRpc => {
  const url = new URL(config.SIGNAL_CLI_URL!);
  const onMalformed = (reason: string) => log.warn({ component: 'signal' }, reason);
  const timeoutMs = config.SIGNAL_CLI_TIMEOUT_MS;
  if (url.protocol === 'tcp:') return new TcpSignalRpc({ host: url.hostname, port: Number(url.port), timeoutMs, onMalformed, subscribe: config.SIGNAL_CLI_RECEIVE_MODE === 'manual', accountWatchMs: config.SIGNAL_CLI_ACCOUNT_WATCH_MS });
  if (config.SIGNAL_CLI_RECEIVE_MODE === 'manual') throw new ConfigError('Invalid configuration SIGNAL_CLI_RECEIVE_MODE: manual needs the TCP transport (SIGNAL_CLI_URL=tcp://HOST:PORT)');
  return new HttpSignalRpc({ url: url.origin, timeoutMs, onMalformed, accountWatchMs: config.SIGNAL_CLI_ACCOUNT_WATCH_MS });
};

