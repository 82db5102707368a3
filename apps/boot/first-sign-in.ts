/**
 * The first sign-in on an install without a mail server: e-mail sign-in cannot mail its link, so
 * `relay start` prints one for the operator (OPERATOR_EMAIL), on its own line of standard output,
 * outside the JSON log, since the link is a secret: it works once, within
 * SIGN_IN_LINK_TTL_SECONDS. With a mail server nothing is printed.
 */
import { requestSignInLink } from '../commands/request-sign-in-link.ts';
import { emailOrUndefined } from '../commands/start-session.ts';
import { newId } from '../../infra/ids/new-id.ts';
import { ConfigError } from '../services/config.ts';
import type { RelayContext } from '../services/context.ts';

export const announceFirstSignIn = async (ctx: RelayContext, write: (line: string) => void = (line) => process.stdout.write(line)): Promise<void> => {
  if (ctx.config.SMTP_URL) return;
  const email = emailOrUndefined(ctx.config.OPERATOR_EMAIL);
  if (email === undefined) throw new ConfigError('Invalid configuration OPERATOR_EMAIL: must be an e-mail address');
  const requested = await requestSignInLink(ctx.store, ctx.config, email, { actor: 'relay-start', correlationId: newId.signIn() });
  if (!requested.ok) throw new Error(`could not make the operator's sign-in link: ${requested.error.message}`);
  const minutes = Math.round(ctx.config.SIGN_IN_LINK_TTL_SECONDS / 60);
  write(
    `\nNo mail server (SMTP_URL), so here is a one-time sign-in link for ${email}, valid ${minutes} minutes:\n  ${requested.link}\n` +
      `Another one, or for another address: npx relay session link --email you@example.com\n\n`,
  );
};
