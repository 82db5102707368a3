import type { Command } from 'commander';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { configFrom, withConfigOptions } from './config-options.ts';
import { parseContact, parseMessenger, simulateInbound } from './commands/simulate.ts';
import { simulateConfirm, simulateMine, simulatePay } from './commands/simulate-payments.ts';
import { withContext } from './with-stores.ts';

const count = (value: unknown, flag: string, min = 0): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be a whole number of at least ${min}, got ${String(value)}`);
  return n;
};

/** `relay simulate …`: a contact's messages, failed deliveries, the outbox and payments on the simulators. */
export const addSimulateCommands = (program: Command): void => {
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
};
