import { execFileSync } from 'node:child_process';

/** A private chain for a test run, or why there is none (outside CI only). */
export type ChainStart<T> =
  | { readonly local: T; /** Stops what this start started (nothing when it was running or given). */ readonly stop: () => void }
  | { readonly local: null; readonly skipReason: string };

/** The chain scripts (scripts/monero-local.sh, scripts/litecoin-local.sh) exit 4 when their Debian package cannot be installed. */
const CANNOT_INSTALL = 4;

const isRunning = (script: string) => {
  try {
    execFileSync(script, ['status'], { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
};

/**
 * The chain of a test run: the one the environment names (`fromEnvironment`), else the project's
 * (`<script> start`: installs the Debian package if missing, and is quick when the chain runs
 * already; its `KEY=VALUE` lines say where it is). With CI set, a chain that cannot be had throws;
 * elsewhere only a package that cannot be installed gives a reason to skip, anything else throws.
 * `stop` stops it only if this start started it and `<PREFIX>_KEEP` is not set.
 */
export const startLocalChain = <T>(chain: {
  /** `Monero`, `Litecoin`: for messages. */
  readonly name: string;
  readonly packageName: string;
  /** `MONERO`, `LITECOIN`: the prefix of the settings the script prints, and of `<PREFIX>_KEEP`. */
  readonly prefix: string;
  readonly script: string;
  readonly fromEnvironment: (env: Record<string, string | undefined>) => T | undefined;
}): ChainStart<T> => {
  const { name, packageName, prefix, script, fromEnvironment } = chain;
  const given = fromEnvironment(process.env);
  if (given) return { local: given, stop: () => undefined };
  const wasRunning = isRunning(script);
  let printed: string;
  try {
    printed = execFileSync(script, ['start'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', timeout: 600_000 });
  } catch (error) {
    const status = (error as { status?: number | null }).status;
    if (status === CANNOT_INSTALL && !process.env.CI) return { local: null, skipReason: `no ${name}: the ${packageName} package cannot be installed here (${script} start exited ${status})` };
    throw new Error(`The ${name} chain could not be started for the ${name} suites: ${String(error)}`);
  }
  const values = Object.fromEntries(
    printed
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const local = fromEnvironment(values);
  if (!local) throw new Error(`${script} start printed no ${prefix}_* settings`);
  return {
    local,
    stop: () => {
      if (!wasRunning && !process.env[`${prefix}_KEEP`]) execFileSync(script, ['stop'], { stdio: 'ignore', timeout: 120_000 });
    },
  };
};

/**
 * The chain a suite runs on: the one its vitest project's globalSetup provided, else one started
 * for the suite (and stopped after it).
 */
export const chainForSuite = <T>(
  provided: T | null | undefined,
  providedSkipReason: string | undefined,
  start: () => ChainStart<T>,
): { local: T | null; skipReason: string; stop: () => void } => {
  if (provided !== undefined) return { local: provided, skipReason: providedSkipReason ?? '', stop: () => undefined };
  const started = start();
  return 'stop' in started ? { local: started.local, skipReason: '', stop: started.stop } : { local: null, skipReason: started.skipReason, stop: () => undefined };
};
