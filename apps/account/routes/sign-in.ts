import { hashKey } from '../../../infra/crypto/keys.ts';
import { clientOf, signInWithCookie, tooManySignIns } from '../signed-in-cookie.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SIGN_IN_ERRORS, signInDecider, signInStreamName, type SignInState } from '../../../domain/signin/decider.ts';
import type { SignInEvent } from '../../../domain/signin/events.ts';
import { fold } from '../../../domain/shared/decider.ts';
import { isDomainError } from '../../../domain/shared/errors.ts';
import { openSmtpMailer, type Mailer } from '../../../infra/mail/mailer.ts';
import type { RelayContext } from '../../services/context.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { requestSignInLink } from '../../commands/request-sign-in-link.ts';
import { emailOrUndefined, userIdForEmail } from '../../commands/start-session.ts';
import { fail, failDomain } from '../errors.ts';
import { emailSignInBody, recoverBody } from '../schemas.ts';
import { emailSignInResponse, recoveredResponse, signInLinkResponse } from '../response-schemas.ts';
import { RECOVERY_REFUSED, userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { recoveryCodeHash } from './recovery-code.ts';

/** Where a followed link lands: the dashboard's home, with `?signin=` saying why when it cannot sign in. */
export const DASHBOARD_HOME = '/dashboard';
/** The page a link that can sign in opens: its button posts the link (same-origin), `#<link>` after it. */
export const CONFIRM_PAGE = '/dashboard/sign-in';

const SIGN_IN_WINDOW_MS = 15 * 60_000;
const LINK = /^([0-9a-f]{24})\.([A-Za-z0-9_-]{43})$/;


/**
 * Passwordless sign-in by e-mail, under `/dashboard/auth` (outside the interface's prefix):
 * `POST /email {email}` sends a one-time link (any address: a new user is made at their first
 * sign-in, so the answer tells nothing of who has an account). Following the link, `GET
 * /email/<signInId>.<secret>`, opens the page that finishes the sign-in; its button posts the link
 * (`POST /email/<signInId>.<secret>`, same-origin, through the proxy), which signs in once within
 * `SIGN_IN_LINK_TTL_SECONDS` with the `relay_session` cookie. Only the secret's hash is kept; the
 * link is never logged. Attempts are limited per address and per client.
 */
export const signInRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const { config } = ctx;
    const mailer: Mailer | undefined = config.SMTP_URL ? await openSmtpMailer(config.SMTP_URL, config.MAIL_FROM, 5_000) : undefined;
    const limiter = ctx.limits.limiter(SIGN_IN_WINDOW_MS);
    app.addHook('onClose', async () => {
      mailer?.close();
      limiter.close();
    });


    app.post('/email', { schema: { summary: 'Sends a one-time sign-in link to the address (202 whether or not it has an account)', security: [], body: emailSignInBody, response: { 202: emailSignInResponse } } }, async (request, reply) => {
      const email = emailOrUndefined(request.body.email);
      if (email === undefined) return fail(reply, 400, 'Invalid email: must be an e-mail address');
      if (!mailer) return fail(reply, 503, 'E-mail sign-in is not available: this Relay has no mail server (SMTP_URL)');
      const byClient = await limiter.consume(`client:${clientOf(request)}`, 1, config.SIGN_IN_PER_CLIENT);
      if (!byClient.allowed) return tooManySignIns(reply, byClient.resetAt);
      const byAddress = await limiter.consume(`address:${email}`, 1, config.SIGN_IN_PER_ADDRESS);
      if (!byAddress.allowed) return tooManySignIns(reply, byAddress.resetAt);

      const requested = await requestSignInLink(ctx.store, config, email, { actor: 'anonymous', correlationId: request.id });
      if (!requested.ok) return failDomain(reply, requested.error);
      const { link, expiresAt } = requested;
      try {
        await mailer.send({
          to: email,
          subject: 'Your Relay sign-in link',
          text: `Sign in to Relay with this link:\n\n${link}\n\nIt works once, until ${expiresAt.toUTCString()}. If you did not ask for it, ignore this mail.\n`,
        });
      } catch (error) {
        request.log.warn({ err: error }, 'sign-in mail not sent');
        return fail(reply, 503, 'The sign-in mail could not be sent: try again later');
      }
      return reply.code(202).send({ success: true, data: { expiresAt: expiresAt.toISOString() } });
    });

    app.post('/recover', { schema: { summary: 'Signs in once with the recovery code of the address (then the code works no more)', security: [], body: recoverBody, response: { 200: recoveredResponse } } }, async (request, reply) => {
      const email = emailOrUndefined(request.body.email);
      const byClient = await limiter.consume(`recover:client:${clientOf(request)}`, 1, config.SIGN_IN_PER_CLIENT);
      if (!byClient.allowed) return tooManySignIns(reply, byClient.resetAt);
      if (email === undefined) return fail(reply, 400, RECOVERY_REFUSED);
      const byAddress = await limiter.consume(`recover:address:${email}`, 1, config.SIGN_IN_PER_ADDRESS);
      if (!byAddress.allowed) return tooManySignIns(reply, byAddress.resetAt);
      const used = await handleCommand(
        ctx.store,
        userStreamName(userIdForEmail(email)),
        userDecider,
        { type: 'UseRecoveryCode', data: { codeHash: recoveryCodeHash(request.body.code), now: new Date() } },
        { actor: 'anonymous', correlationId: request.id },
      );
      if (!used.ok) return fail(reply, 400, RECOVERY_REFUSED);
      const session = await signInWithCookie(ctx, email, request, reply);
      return reply.send({ success: true, data: { signedIn: true, sessionId: session.sessionId } });
    });

    /** The command a link makes of its sign-in's state, with the address it signs in. */
    const completion = (state: SignInState, secret: string, now: Date) => {
      const email = state.status === 'none' ? '' : state.email;
      return { email, command: { type: 'CompleteEmailSignIn' as const, data: { secretHash: hashKey(secret), userId: email === '' ? '' : userIdForEmail(email), now } } };
    };

    // Following the link (a GET: a mail scanner, a link preview or another site may make it) signs
    // nobody in and uses nothing up (issue 47, login CSRF): a link that would sign in lands on the
    // page that asks the person to, its token in the fragment (never sent to a server again); one
    // that would not lands on /dashboard saying why, as before.
    app.get('/email/:link', { schema: { summary: 'Follows a sign-in link: lands on the page that finishes the sign-in (POST), or on /dashboard saying why it cannot', security: [], params: z.object({ link: z.string() }), response: { 303: signInLinkResponse } } }, async (request, reply) => {
      const landing = (why: 'invalid' | 'expired' | 'used') => reply.code(303).header('location', `${DASHBOARD_HOME}?signin=${why}`).send({ success: false, error: why });
      const parsed = LINK.exec(request.params.link);
      if (!parsed) return landing('invalid');
      const [, signInId, secret] = parsed as unknown as [string, string, string];
      const state = fold(signInDecider, (await ctx.store.readStream(signInStreamName(signInId))).events as unknown as SignInEvent[]);
      const decision = signInDecider.decide(completion(state, secret, new Date()).command, state);
      if (isDomainError(decision)) return landing(decision.message === SIGN_IN_ERRORS.used ? 'used' : decision.message === SIGN_IN_ERRORS.expired ? 'expired' : 'invalid');
      const [event] = decision;
      if (event?.type === 'EmailSignInRefused') return landing(event.data.reason);
      return reply.code(303).header('location', `${CONFIRM_PAGE}#${request.params.link}`).header('cache-control', 'no-store').send({ success: true, data: { signedIn: false } });
    });

    app.post(
      '/email/:link',
      { schema: { summary: 'Signs in once with a sign-in link (what the page the link opens posts): sets the relay_session cookie', security: [], params: z.object({ link: z.string() }), response: { 200: recoveredResponse } } },
      async (request, reply) => {
        const parsed = LINK.exec(request.params.link);
        if (!parsed) return fail(reply, 400, SIGN_IN_ERRORS.invalid);
        const [, signInId, secret] = parsed as unknown as [string, string, string];
        const now = new Date();
        let email = '';
        const result = await handleCommand(
          ctx.store,
          signInStreamName(signInId),
          signInDecider,
          (state) => {
            const decided = completion(state, secret, now);
            email = decided.email;
            return decided.command;
          },
          { actor: 'anonymous', correlationId: request.id },
        );
        if (!result.ok) return fail(reply, 400, result.error.message);
        const [event] = result.events;
        if (event?.type === 'EmailSignInRefused') return fail(reply, 400, SIGN_IN_ERRORS[event.data.reason]);
        const session = await signInWithCookie(ctx, email, request, reply);
        return reply.header('cache-control', 'no-store').send({ success: true, data: { signedIn: true, sessionId: session.sessionId } });
      },
    );
  };
