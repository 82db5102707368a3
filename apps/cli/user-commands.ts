import { Option, type Command } from 'commander';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { withConfigOptions } from './config-options.ts';
import { createSession, listSessions, revokeSessions, signInLink, userIdForEmail } from './commands/session.ts';
import { withContext } from './with-stores.ts';

/** `relay session create|link|list|revoke` and `relay user tier`: an operator's commands on users and their dashboard sessions. */
export const addUserCommands = (program: Command): void => {
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
};
