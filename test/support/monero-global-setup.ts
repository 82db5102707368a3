import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startLocalChain, type ChainStart } from './local-chain.ts';

/** What the Monero suites need of the private chain (scripts/monero-local.sh prints it). */
export interface MoneroLocal {
  /** The merchant's watch-only wallet, the one Relay uses (its Digest login in the URL). */
  readonly walletRpcUrl: string;
  readonly network: string;
  /** monerod, for generateblocks and /pop_blocks. */
  readonly daemonRpcUrl: string;
  /** The customer's wallet, which pays. */
  readonly customerWalletRpcUrl: string;
  /** Where blocks are mined to (the customer, so that it can go on paying). */
  readonly customerAddress: string;
}

// Alike litecoin-global-setup.ts in shape only: each chain provides its own keys from its own settings; what they share is in local-chain.ts.
declare module 'vitest' {
  export interface ProvidedContext {
    /** The chain of the Monero suites, or null when none could be had (outside CI only). */
    moneroLocal: MoneroLocal | null;
    /** Why the Monero suites skip, when they do. */
    moneroSkipReason: string;
  }
}

const script = fileURLToPath(new URL('../../scripts/monero-local.sh', import.meta.url));

export type MoneroStart = ChainStart<MoneroLocal>;

const fromEnvironment = (env: Record<string, string | undefined>): MoneroLocal | undefined => {
  const { MONERO_WALLET_RPC_URL, MONERO_DAEMON_RPC_URL, MONERO_CUSTOMER_WALLET_RPC_URL, MONERO_CUSTOMER_ADDRESS } = env;
  if (!MONERO_WALLET_RPC_URL || !MONERO_DAEMON_RPC_URL || !MONERO_CUSTOMER_WALLET_RPC_URL || !MONERO_CUSTOMER_ADDRESS) return undefined;
  return {
    walletRpcUrl: MONERO_WALLET_RPC_URL,
    network: env.MONERO_NETWORK ?? 'regtest',
    daemonRpcUrl: MONERO_DAEMON_RPC_URL,
    customerWalletRpcUrl: MONERO_CUSTOMER_WALLET_RPC_URL,
    customerAddress: MONERO_CUSTOMER_ADDRESS,
  };
};

/**
 * The chain of a test run: the one the environment names (MONERO_WALLET_RPC_URL,
 * MONERO_DAEMON_RPC_URL, MONERO_CUSTOMER_WALLET_RPC_URL, MONERO_CUSTOMER_ADDRESS), else the
 * project's (scripts/monero-local.sh start: installs Debian's monero package if missing, and is
 * quick when the chain runs already). With CI set, a chain that cannot be had throws; elsewhere
 * only a monero package that cannot be installed gives a reason to skip, anything else throws.
 */
export const startMoneroLocal = (): MoneroStart => startLocalChain({ name: 'Monero', packageName: 'monero', prefix: 'MONERO', script, fromEnvironment });

/** One chain per test run (vitest globalSetup): started here, stopped at the end if this run started it (MONERO_KEEP=1 keeps it). */
export default function setup(project: TestProject) {
  const started = startMoneroLocal();
  project.provide('moneroLocal', started.local);
  project.provide('moneroSkipReason', started.local ? '' : started.skipReason);
  return started.local ? started.stop : undefined;
}
