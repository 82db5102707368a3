import { Command, Option } from 'commander';
import { ROLES, startRelay, type Role } from '../boot/runtime.ts';
import { ConfigError } from '../services/config.ts';
import { VERSION } from '../services/version.ts';
import { RUNNING_FROM } from '../services/running-from.ts';
import { configFrom, withConfigOptions } from './config-options.ts';
import { addHistoryCommands } from './history-commands.ts';
import { addIdentityCommands } from './identity-commands.ts';
import { addSimulateCommands } from './simulate-commands.ts';
import { addUserCommands } from './user-commands.ts';

// Everything relay creates (stores, their -wal and -shm files, snapshots, the secret key) is its owner's only.
process.umask(0o077);

const program = new Command('relay').description('Relay: one REST API for Signal, SimpleX and Session').version(VERSION);

withConfigOptions(
  program
    .command('start')
    .description('run Relay (the whole service in one process by default)')
    .addOption(new Option('--role <role>', 'which part of Relay to run').choices(ROLES).default('all')),
).action(async (options: Record<string, unknown>) => {
  const config = configFrom(options);
  const relay = await startRelay(config, options.role as Role);
  const log = relay.ctx.log;
  log.info({ role: options.role, port: config.PORT, host: config.HOST, dataDir: config.dataDir, version: VERSION, code: RUNNING_FROM }, 'relay started');
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    relay.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // SIGHUP: the terminal it was started from closed. A signal sent to the whole process group
  // arrives twice under npm (once from the sender, once forwarded by npm): the second is ignored.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => shutdown(signal));
});

addUserCommands(program);
addIdentityCommands(program);
addSimulateCommands(program);
addHistoryCommands(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`relay: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
