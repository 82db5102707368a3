import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

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

declare module 'vitest' {
  export interface ProvidedContext {
    /** The chain of the Litecoin suites, or null when none could be had (outside CI only). */
    litecoinLocal: LitecoinLocal | null;
    /** Why the Litecoin suites skip, when they do. */
    litecoinSkipReason: string;
  }
}

const script = fileURLToPath(new URL('../../scripts/litecoin-local.sh', import.meta.url));

/** scripts/litecoin-local.sh exits 4 when the litecoind package cannot be installed. */
const CANNOT_INSTALL = 4;

export type LitecoinStart =
  | { readonly local: LitecoinLocal; /** Stops what this start started (nothing when it was running or given). */ readonly stop: () => void }
  | { readonly local: null; readonly skipReason: string };

const fromEnvironment = (env: Record<string, string | undefined>): LitecoinLocal | undefined => {
  const { LITECOIN_RPC_URL, LITECOIN_CUSTOMER_RPC_URL, LITECOIN_CUSTOMER_ADDRESS } = env;
  if (!LITECOIN_RPC_URL || !LITECOIN_CUSTOMER_RPC_URL || !LITECOIN_CUSTOMER_ADDRESS) return undefined;
  return { rpcUrl: LITECOIN_RPC_URL, network: env.LITECOIN_NETWORK ?? 'regtest', customerRpcUrl: LITECOIN_CUSTOMER_RPC_URL, customerAddress: LITECOIN_CUSTOMER_ADDRESS };
};

const isRunning = () => {
  try {
    execFileSync(script, ['status'], { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
};

/**
 * The chain of a test run: the one the environment names (LITECOIN_RPC_URL,
 * LITECOIN_CUSTOMER_RPC_URL, LITECOIN_CUSTOMER_ADDRESS), else the project's
 * (scripts/litecoin-local.sh start: installs Debian's litecoind package if missing, and is quick
 * when the chain runs already). With CI set, a chain that cannot be had throws; elsewhere only a
 * litecoind package that cannot be installed gives a reason to skip, anything else throws.
 */
export const startLitecoinLocal = (): LitecoinStart => {
  const given = fromEnvironment(process.env);
  if (given) return { local: given, stop: () => undefined };
  const wasRunning = isRunning();
  let printed: string;
  try {
    printed = execFileSync(script, ['start'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', timeout: 600_000 });
  } catch (error) {
    const status = (error as { status?: number | null }).status;
    if (status === CANNOT_INSTALL && !process.env.CI) return { local: null, skipReason: `no Litecoin: the litecoind package cannot be installed here (${script} start exited ${status})` };
    throw new Error(`The Litecoin chain could not be started for the Litecoin suites: ${String(error)}`);
  }
  const values = Object.fromEntries(
    printed
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const local = fromEnvironment(values);
  if (!local) throw new Error(`${script} start printed no LITECOIN_* settings`);
  return {
    local,
    stop: () => {
      if (!wasRunning && !process.env.LITECOIN_KEEP) execFileSync(script, ['stop'], { stdio: 'ignore', timeout: 120_000 });
    },
  };
};

/** One chain per test run (vitest globalSetup): started here, stopped at the end if this run started it (LITECOIN_KEEP=1 keeps it). */
export default function setup(project: TestProject) {
  const started = startLitecoinLocal();
  project.provide('litecoinLocal', started.local);
  project.provide('litecoinSkipReason', started.local ? '' : started.skipReason);
  return started.local ? started.stop : undefined;
}
