import { MESSENGERS, type Messenger } from '../../domain/shared/messengers.ts';
import type { MessengerConnector } from '../../infra/messenger/port.ts';
import { SimulatorConnector } from '../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { ConfigError, type Config } from './config.ts';

export interface Connectors {
  readonly byMessenger: ReadonlyMap<Messenger, MessengerConnector>;
  close(): Promise<void>;
}

const DAEMON_SETTINGS: Record<Messenger, keyof Config> = {
  signal: 'SIGNAL_CLI_URL',
  simplex: 'SIMPLEX_WS_URL',
  session: 'SESSION_CLIENT_URL',
};

/**
 * One connector per messenger: the daemon's when one is configured, else the simulator. The
 * daemon connectors come with a later issue, so configuring one stops start-up with a clear line.
 */
export const openConnectors = (config: Config): Connectors => {
  const store = new SimulatorStore(config.dataDir);
  const byMessenger = new Map<Messenger, MessengerConnector>();
  for (const messenger of MESSENGERS) {
    const setting = DAEMON_SETTINGS[messenger];
    if (config[setting]) {
      store.close();
      throw new ConfigError(`Invalid configuration ${setting}: the ${messenger} daemon connector is not available in this version`);
    }
    byMessenger.set(messenger, new SimulatorConnector(messenger, store));
  }
  return {
    byMessenger,
    close: async () => {
      await Promise.all([...byMessenger.values()].map((c) => c.close()));
      store.close();
    },
  };
};
