import { once } from 'node:events';
import { Command, Option } from 'commander';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { closeContext, openContext, ROLES, startRelay, type Role } from '../boot/runtime.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { ConfigError } from '../boot/config.ts';
import type { RelayContext } from '../boot/context.ts';
import { createLogger } from '../boot/logger.ts';
import { VERSION } from '../boot/version.ts';
import { configFrom, withConfigOptions } from './config-options.ts';
import { printEvents } from './commands/events.ts';
import { openEventStore } from '../boot/stores.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { copyEvents } from './commands/events-copy.ts';
import { runProjectionsRebuild } from './commands/projections.ts';
import { createSession, listSessions, revokeSessions, signInLink, userIdForEmail } from './commands/session.ts';
import { parseContact, parseMessenger, simulateInbound } from './commands/simulate.ts';
import { simulateConfirm, simulateMine, simulatePay } from './commands/simulate-payments.ts';
import { bindSignalAccount } from './commands/signal-bind.ts';
import { linkSignalAccount } from './commands/signal-link.ts';
import { sessionConnectorOf, signalRpcOf } from '../boot/connectors.ts';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { RUNNING_FROM } from '../boot/running-from.ts';
import { EventSessionIdentityStore } from '../boot/session-identities.ts';
import { exportSessionIdentity, importSessionIdentity, type SessionSecret } from './commands/session-messenger.ts';

// Everything relay creates (stores, their -wal and -shm files, snapshots, the secret key) is its owner's only.
process.umask(0o077);

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Runs `work` on the stores of the configured data, quietly (logs at warn and above, to stderr). */
const withContext = async (options: Record<string, unknown>, work: (ctx: RelayContext) => Promise<void>) => {
  const config = configFrom(options);
  const ctx = await openContext(config, createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL));
  try {
    await work(ctx);
  } finally {
    await closeContext(ctx);
  }
};

/** Runs `work` on the configured event store alone (no secret key, read models or broker). */
const withEventStore = async (options: Record<string, unknown>, work: (store: EventStore) => Promise<void>) => {
  const store = await openEventStore(configFrom(options));
  try {
    await work(store);
  } finally {
    await store.close();
  }
};

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

const session = program.command('session').description('dashboard sessions');
withConfigOptions(
  session
    .command('create')
    .description('create the user if missing and print a dashboard session token (the relay_session cookie)')
    .requiredOption('--email <email>', 'the user’s e-mail')
    .option('--name <name>', 'display name for a new user'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    process.stdout.write(`${await createSession(ctx, String(options.email), options.name as string | undefined)}\n`);
  }),
);

withConfigOptions(
  session
    .command('link')
    .description('print a one-time sign-in link for the address (the link e-mail sign-in mails), for a Relay without a mail server')
    .requiredOption('--email <email>', 'the user’s e-mail (a new user is made when the link is followed)'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    process.stdout.write(`${await signInLink(ctx, String(options.email))}\n`);
  }),
);

withConfigOptions(
  session
    .command('list')
    .description('list the live dashboard sessions of a user, as JSON lines')
    .requiredOption('--email <email>', 'the user’s e-mail'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    for (const line of listSessions(ctx, String(options.email))) process.stdout.write(`${JSON.stringify(line)}\n`);
  }),
);
withConfigOptions(
  session
    .command('revoke')
    .description('end dashboard sessions of a user at once: one (--session) or all; prints how many ended')
    .requiredOption('--email <email>', 'the user’s e-mail')
    .option('--session <sessionId>', 'only this session (see relay session list)'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    const ended = await revokeSessions(ctx, String(options.email), options.session === undefined ? undefined : String(options.session));
    process.stdout.write(`${ended}\n`);
  }),
);

const user = program.command('user').description('operator commands on users');
withConfigOptions(
  user
    .command('tier')
    .description('set the send tier of a user (the paid tier raises the send limit)')
    .requiredOption('--email <email>', 'the user’s e-mail')
    .addOption(new Option('--tier <tier>', 'the tier').choices(['free', 'paid']).makeOptionMandatory()),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    const result = await handleCommand(
      ctx.store,
      userStreamName(userIdForEmail(String(options.email))),
      userDecider,
      { type: 'ChangeSendTier', data: { tier: options.tier as 'free' | 'paid', now: new Date() } },
      { actor: 'cli' },
    );
    if (!result.ok) throw new Error(result.error.message);
  }),
);

const signal = program.command('signal').description('Signal identities on signal-cli (SIGNAL_CLI_URL)');

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

/** A secret given as `-` is read from stdin (kept out of the process list and the shell's history). */
const secretArgument = async (value: string): Promise<string> => {
  if (value !== '-') return value;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
};

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

const simulate = program.command('simulate').description('drive the simulator connector');
withConfigOptions(
  simulate
    .command('inbound')
    .description('inject an inbound message, as if a contact wrote to the app’s bot identity')
    .requiredOption('--app <appId>', 'the app written to')
    .requiredOption('--messenger <messenger>', 'signal, simplex or session')
    .requiredOption('--contact <contactId>', 'the sender, in the messenger’s format')
    .requiredOption('--text <text>', 'the message body')
    .option('--group <groupId>', 'for a group message: the group id')
    .option('--timestamp <ms>', 'the messenger’s timestamp, epoch ms')
    .option('--count <n>', 'inject n messages, the text of each followed by " #<i>" (i from 1)', '1'),
).action((options: Record<string, unknown>) => {
  const messenger = parseMessenger(String(options.messenger));
  const contactId = parseContact(messenger, String(options.contact));
  const count = Number(options.count);
  if (!Number.isInteger(count) || count < 1) throw new Error(`--count must be a positive integer, got ${String(options.count)}`);
  return withContext(options, async (ctx) => {
    for (let i = 1; i <= count; i++) {
      const result = await simulateInbound(ctx, {
        appId: String(options.app),
        messenger,
        contactId,
        text: count === 1 ? String(options.text) : `${String(options.text)} #${i}`,
        ...(options.group !== undefined ? { groupId: String(options.group) } : {}),
        ...(options.timestamp !== undefined ? { timestamp: Number(options.timestamp) } : {}),
      });
      if (result.kind === 'unrouted') throw new Error(result.reason);
      process.stdout.write(`${JSON.stringify(result)}\n`);
    }
  });
});
withConfigOptions(
  simulate
    .command('fail')
    .description('make the next deliveries to a contact fail (a transient failure, retried; with --permanent, a refusal that is not)')
    .requiredOption('--messenger <messenger>', 'signal, simplex or session')
    .requiredOption('--contact <contactId>', 'the contact')
    .option('--times <n>', 'how many deliveries fail; -1 until cleared, 0 clears', '1')
    .option('--reason <text>', 'the failure reason', 'Simulated failure')
    .option('--permanent', 'the messenger refuses the contact: no retry'),
).action((options: Record<string, unknown>) => {
  const config = configFrom(options);
  const times = Number(options.times);
  if (!Number.isInteger(times)) throw new Error(`--times must be an integer, got ${String(options.times)}`);
  const store = new SimulatorStore(config.dataDir);
  try {
    store.failNext(parseMessenger(String(options.messenger)), String(options.contact), times, String(options.reason), options.permanent === true);
  } finally {
    store.close();
  }
});
withConfigOptions(
  simulate
    .command('outbox')
    .description('list the delivery attempts the simulator was handed, as JSON lines')
    .option('--message <messageId>', 'only this message')
    .option('--contact <contactId>', 'only this contact'),
).action((options: Record<string, unknown>) => {
  const store = new SimulatorStore(configFrom(options).dataDir);
  try {
    const filter = {
      ...(options.message !== undefined ? { messageId: String(options.message) } : {}),
      ...(options.contact !== undefined ? { contactId: String(options.contact) } : {}),
    };
    for (const delivery of store.deliveries(filter)) process.stdout.write(`${JSON.stringify(delivery)}\n`);
  } finally {
    store.close();
  }
});

const count = (value: unknown, flag: string, min = 0): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be a whole number of at least ${min}, got ${String(value)}`);
  return n;
};
withConfigOptions(
  simulate
    .command('pay')
    .description('pay an invoice on the simulated chain (PAYMENT_PROCESSOR=simulator)')
    .requiredOption('--invoice <invoiceId>', 'the invoice')
    .option('--amount <coins>', 'pay this much instead of the amount due (less: underpaid, more: overpaid)')
    .option('--confirmations <n>', 'confirmations it has at once (0: in the pool)', '0'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    const payment = simulatePay(ctx, {
      invoiceId: String(options.invoice),
      ...(options.amount !== undefined ? { amount: String(options.amount) } : {}),
      confirmations: count(options.confirmations, '--confirmations'),
    });
    process.stdout.write(`${JSON.stringify(payment)}\n`);
  }),
);
withConfigOptions(
  simulate
    .command('confirm')
    .description('set the confirmations of a simulated payment (fewer: a reorganisation)')
    .requiredOption('--txid <txid>', 'the payment’s transaction')
    .requiredOption('--confirmations <n>', 'its confirmations now'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    process.stdout.write(`${JSON.stringify(simulateConfirm(ctx, String(options.txid), count(options.confirmations, '--confirmations')))}\n`);
  }),
);
withConfigOptions(
  simulate
    .command('blocks')
    .description('mine blocks on the simulated chain: every simulated payment gains as many confirmations')
    .option('--count <n>', 'how many blocks', '1'),
).action((options: Record<string, unknown>) =>
  withContext(options, async (ctx) => {
    process.stdout.write(`${JSON.stringify({ height: simulateMine(ctx, count(options.count, '--count', 1)) })}\n`);
  }),
);

const events = withConfigOptions(
  program
    .command('events')
    .description('print the event history as JSON lines, in global order (for auditors)')
    .option('--stream <name>', 'only this stream (repeatable)', collect)
    .option('--category <name>', 'only this category, e.g. app, credential, outbound (repeatable)', collect)
    .option('--type <type>', 'only this event type (repeatable)', collect)
    .option('--since <time>', 'recorded at or after this ISO 8601 time')
    .option('--until <time>', 'recorded before this ISO 8601 time')
    .option('--after <position>', 'only events after this global position')
    .option('--limit <n>', 'at most this many events'),
).action((options: Record<string, unknown>) =>
  // An auditor's read: the event store alone, which needs no secret key.
  withEventStore(options, async (store) => {
    await printEvents(store, options, (lines) => (process.stdout.write(lines) ? undefined : once(process.stdout, 'drain').then(() => undefined)));
  }),
);
withConfigOptions(
  events
    .command('copy')
    .description(
      'copy the whole event history into another store (an empty one, or the same target again to resume), ' +
        'with ids, stream versions, times and checkpoints, and verify both histories are equal; stop Relay for the final run',
    )
    .requiredOption('--to <url>', 'the target store: sqlite:<file>, postgres://…[?schema=<name>] or esdb://…')
    .option('--from <url>', 'the source store (default: the configured one)'),
).action(async (options: Record<string, unknown>) => {
  await copyEvents(configFrom(options), { to: String(options.to), ...(options.from !== undefined ? { from: String(options.from) } : {}) }, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
});

const projections = program.command('projections').description('the read models (users, apps, credentials), for auditors');
withConfigOptions(
  projections
    .command('rebuild')
    .description(
      'rebuild every read model from event 0 and compare it with the live one (its snapshot and the events after it, ' +
        'as a starting process builds it); exit code 0 when every read model is equal, 1 when one differs',
    )
    .option('--json', 'print the report as one JSON object')
    .option(
      '--replace',
      'after the comparison, write the rebuilt read models as the snapshot the next start uses (stop Relay first); ' +
        'the exit code still tells whether they differed',
    ),
).action(async (options: Record<string, unknown>) => {
  const equal = await runProjectionsRebuild(
    configFrom(options),
    { json: options.json === true, replace: options.replace === true },
    { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`relay: ${line}\n`) },
  );
  if (!equal) process.exitCode = 1;
});

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`relay: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
