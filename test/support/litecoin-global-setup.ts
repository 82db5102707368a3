import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startLocalChain, type ChainStart } from './local-chain.ts';

/** What the Litecoin suites need of the private chain (scripts/litecoin-local.sh prints it). */
export interface LitecoinLocal {
  /** The merchant's watch-only wallet, the one Relay uses (login in the URL, path /wallet/merchant). */
  readonly rpcUrl: string;
  readonly network: string;
  /** The customer's wallet, which pays; the node's own calls (generatetoaddress, invalidateblock) go there too. */
  readonly customerRpcUrl: string;
  /** Where blocks are mined to (the customer, so that it can go on paying). */
  readonly customerAddress: string;
}

// Alike monero-global-setup.ts in shape only: each chain provides its own keys from its own settings; what they share is in local-chain.ts.
declare module 'vitest' {
  export interface ProvidedContext {
    /** The chain of the Litecoin suites, or null when none could be had (outside CI only). */
    litecoinLocal: LitecoinLocal | null;
    /** Why the Litecoin suites skip, when they do. */
    litecoinSkipReason: string;
  }
}

const script = fileURLToPath(new URL('../../scripts/litecoin-local.sh', import.meta.url));

export type LitecoinStart = ChainStart<LitecoinLocal>;

const fromEnvironment = (env: Record<string, string | undefined>): LitecoinLocal | undefined => {
  const { LITECOIN_RPC_URL, LITECOIN_CUSTOMER_RPC_URL, LITECOIN_CUSTOMER_ADDRESS } = env;
  if (!LITECOIN_RPC_URL || !LITECOIN_CUSTOMER_RPC_URL || !LITECOIN_CUSTOMER_ADDRESS) return undefined;
  return { rpcUrl: LITECOIN_RPC_URL, network: env.LITECOIN_NETWORK ?? 'regtest', customerRpcUrl: LITECOIN_CUSTOMER_RPC_URL, customerAddress: LITECOIN_CUSTOMER_ADDRESS };
};

/**
 * The chain of a test run: the one the environment names (LITECOIN_RPC_URL,
 * LITECOIN_CUSTOMER_RPC_URL, LITECOIN_CUSTOMER_ADDRESS), else the project's
 * (scripts/litecoin-local.sh start: installs Debian's litecoind package if missing, and is quick
 * when the chain runs already). With CI set, a chain that cannot be had throws; elsewhere only a
 * litecoind package that cannot be installed gives a reason to skip, anything else throws.
 */
export const startLitecoinLocal = (): LitecoinStart => startLocalChain({ name: 'Litecoin', packageName: 'litecoind', prefix: 'LITECOIN', script, fromEnvironment });

/** One chain per test run (vitest globalSetup): started here, stopped at the end if this run started it (LITECOIN_KEEP=1 keeps it). */
export default function setup(project: TestProject) {
  const started = startLitecoinLocal();
  project.provide('litecoinLocal', started.local);
  project.provide('litecoinSkipReason', started.local ? '' : started.skipReason);
  return started.local ? started.stop : undefined;
}
