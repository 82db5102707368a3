import { once } from 'node:events';
import type { Command } from 'commander';
import { configFrom, withConfigOptions } from './config-options.ts';
import { printEvents } from './commands/events.ts';
import { copyEvents } from './commands/events-copy.ts';
import { runProjectionsRebuild } from './commands/projections.ts';
import { withEventStore } from './with-stores.ts';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `relay events [copy]` and `relay projections rebuild`: what auditors read, move and check. */
export const addHistoryCommands = (program: Command): void => {
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
};
