import type { Command } from 'commander';
import type { RelayContext } from '../services/context.ts';
import { sessionConnectorOf } from '../boot/connectors.ts';
import { signalRpcOf } from '../services/signal-rpc.ts';
import { EventSessionIdentityStore } from '../boot/session-identities.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { withConfigOptions } from './config-options.ts';
import { exportSessionIdentity, importSessionIdentity, type SessionSecret } from './commands/session-messenger.ts';
import { bindSignalAccount } from '../commands/signal-bind.ts';
import { linkSignalAccount } from '../commands/signal-link.ts';
import { withContext } from './with-stores.ts';

/** Runs `work` with the stores and a connection to the configured signal-cli daemon, closed after. */
const withSignalDaemon = (options: Record<string, unknown>, command: string, work: (ctx: RelayContext, rpc: SignalRpc) => Promise<void>) =>
  withContext(options, async (ctx) => {
    if (!ctx.config.SIGNAL_CLI_URL)
      throw new Error(
        `relay signal ${command} needs SIGNAL_CLI_URL in its own environment (or --signal-cli-url): the signal-cli daemon, ` +
          'http://HOST:PORT or tcp://HOST:PORT, the same the running Relay uses (this command does not ask the running Relay)',
      );
    const rpc = signalRpcOf(ctx.config, ctx.log);
    try {
      await work(ctx, rpc);
    } finally {
      await rpc.close();
    }
  });

/** A secret given as `-` is read from stdin (kept out of the process list and the shell's history). */
const secretArgument = async (value: string): Promise<string> => {
  if (value !== '-') return value;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
};

/** `relay signal bind|link` and `relay session-messenger import|export`: the bots' identities on Signal and Session. */
export const addIdentityCommands = (program: Command): void => {
  const signal = program.command('signal').description('Signal identities on signal-cli (SIGNAL_CLI_URL)');

  withConfigOptions(
    signal
      .command('bind')
      .description("make a Signal account of signal-cli's daemon the bot identity of an app-messenger")
      .requiredOption('--app-messenger <id>', 'the app-messenger (its id, not the app id)')
      .requiredOption('--account <account>', 'the account on the daemon: its E.164 number, or its ACI'),
  ).action((options: Record<string, unknown>) =>
    withSignalDaemon(options, 'bind', async (ctx, rpc) => {
      const outcome = await bindSignalAccount(
        { store: ctx.store, apps: ctx.models.apps, rpc },
        { appMessengerId: String(options.appMessenger), account: String(options.account), now: new Date() },
      );
      if (!outcome.ok) throw new Error(outcome.reason);
      process.stdout.write(outcome.bound === 'now' ? 'bound\n' : 'already bound\n');
    }),
  );

  withConfigOptions(
    signal
      .command('link')
      .description('link signal-cli as a new device of a Signal account (a QR code to scan) and make that account the bot identity of an app-messenger')
      .requiredOption('--app-messenger <id>', 'the app-messenger (its id, not the app id)')
      .option('--device-name <name>', 'the name the phone shows for the linked device', 'Relay')
      .option('--timeout <seconds>', 'how long to wait for the phone', '180'),
  ).action((options: Record<string, unknown>) => {
    const seconds = Number(options.timeout);
    if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`--timeout must be a positive number of seconds, got ${String(options.timeout)}`);
    return withSignalDaemon(options, 'link', async (ctx, rpc) => {
      const outcome = await linkSignalAccount(
        { store: ctx.store, apps: ctx.models.apps, rpc, show: (instructions) => process.stdout.write(instructions) },
        { appMessengerId: String(options.appMessenger), deviceName: String(options.deviceName), timeoutMs: seconds * 1000, now: () => new Date() },
      );
      if (!outcome.ok) throw new Error(outcome.reason);
      process.stdout.write(`linked ${outcome.account}: bound\n`);
    });
  });

  const sessionMessenger = program.command('session-messenger').description("Session bot identities of Relay's own Session client (SESSION_NETWORK=on)");

  withConfigOptions(
    sessionMessenger
      .command('import')
      .description("make an existing Session account (its recovery phrase or seed) the bot identity of a Session app-messenger that has none yet, and its Session ID the app-messenger's address")
      .requiredOption('--app-messenger <id>', 'the app-messenger (its id, not the app id)')
      .option('--mnemonic <words>', 'the account\'s 13-word recovery phrase, quoted; - reads it from stdin')
      .option('--seed <hex>', 'the account\'s seed, 32 hex characters; - reads it from stdin'),
  ).action(async (options: Record<string, unknown>) => {
    if ((options.mnemonic === undefined) === (options.seed === undefined)) throw new Error('give the account as one of --mnemonic "<13 words>" or --seed <32 hex characters>');
    const secret: SessionSecret = options.mnemonic !== undefined ? { mnemonic: await secretArgument(String(options.mnemonic)) } : { seed: await secretArgument(String(options.seed)) };
    await withContext(options, async (ctx) => {
      if (ctx.config.SESSION_NETWORK !== 'on')
        throw new Error('relay session-messenger import needs SESSION_NETWORK=on in its own environment (or --session-network on), as the running Relay has it: on the simulator Session app-messengers have no Session identity');
      const connector = sessionConnectorOf(ctx.config, { store: ctx.store, secrets: ctx.secrets }, ctx.log, 'cli');
      try {
        const outcome = await importSessionIdentity(
          { store: ctx.store, apps: ctx.models.apps, connector },
          { appMessengerId: String(options.appMessenger), secret, now: new Date() },
        );
        if (!outcome.ok) throw new Error(outcome.reason);
        process.stdout.write(`${outcome.imported === 'now' ? 'imported' : 'already imported'} ${outcome.sessionId}\n`);
      } finally {
        await connector.close();
      }
    });
  });

  withConfigOptions(
    sessionMessenger
      .command('export')
      .description("print the 13-word recovery phrase of a Session app-messenger's bot identity, for the operator's backup (a secret: it goes to stdout only)")
      .requiredOption('--app-messenger <id>', 'the app-messenger (its id, not the app id)'),
  ).action((options: Record<string, unknown>) =>
    withContext(options, async (ctx) => {
      const identities = new EventSessionIdentityStore(ctx.store, ctx.secrets, { actor: 'cli', log: ctx.log });
      const outcome = await exportSessionIdentity({ identities }, String(options.appMessenger));
      if (!outcome.ok) throw new Error(outcome.reason);
      process.stdout.write(`${outcome.mnemonic}\n`);
      process.stderr.write(`the recovery phrase of ${outcome.sessionId}: keep it like a password\n`);
    }),
  );
};
