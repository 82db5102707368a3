import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MESSENGER_CODE_ERRORS, messengerCodeDecider, messengerCodeStreamName, type MessengerCodeState } from '../../../domain/messenger-code/decider.ts';
import type { MessengerCodeEvent } from '../../../domain/messenger-code/events.ts';
import { fold } from '../../../domain/shared/decider.ts';
import { isDomainError } from '../../../domain/shared/errors.ts';
import { hashKey } from '../../../infra/crypto/keys.ts';
import type { RelayContext } from '../../services/context.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { issueMessengerCode } from '../../commands/issue-messenger-code.ts';
import { fail } from '../errors.ts';
import { clientOf, signInWithCookie, tooManySignIns } from '../signed-in-cookie.ts';
import { messengerSignInResponse, messengerSignInStartedResponse, messengerSignInStatusResponse } from '../response-schemas.ts';

const WINDOW_MS = 15 * 60_000;
/** `<codeRef>.<secret>`: what the browser that asked follows the sign-in with. */
const POLL_TOKEN = /^([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/;

/**
 * Sign-in through a messenger, under `/dashboard/auth` (docs/sign-in.md): `POST /messenger` shows
 * a code; the person sends `/signin CODE` to any Relay bot from a messenger contact they linked
 * to their account (`/link`, contacts.ts); the browser polls `GET /messenger/<pollToken>`, which
 * answers `pending` until then and `confirmed` after, and posts the token (`POST
 * /messenger/<pollToken>`, same-origin through the proxy), which signs it in once with the
 * `relay_session` cookie.
 */
export const messengerSignInRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const limiter = ctx.limits.limiter(WINDOW_MS);
    app.addHook('onClose', async () => limiter.close());

    app.post('/messenger', { schema: { summary: 'Starts a sign-in through a messenger: a code to send as /signin CODE to any Relay bot', security: [], response: { 202: messengerSignInStartedResponse } } }, async (request, reply) => {
      const byClient = await limiter.consume(clientOf(request), 1, ctx.config.SIGN_IN_PER_CLIENT);
      if (!byClient.allowed) return tooManySignIns(reply, byClient.resetAt);
      const secret = randomBytes(32).toString('base64url');
      const issued = await issueMessengerCode(
        ctx.store,
        ctx.keyedHash,
        { purpose: 'sign-in', userId: null, pollSecretHash: hashKey(secret), ttlSeconds: ctx.config.MESSENGER_CODE_TTL_SECONDS },
        { actor: 'anonymous', correlationId: request.id },
      );
      return reply
        .code(202)
        .header('cache-control', 'no-store')
        .send({ success: true, data: { code: issued.code, command: `/signin ${issued.code}`, pollToken: `${issued.codeRef}.${secret}`, expiresAt: issued.expiresAt.toISOString() } });
    });

    /** The command the poll token makes of the code's state: complete the sign-in as the contact's user, if it is linked. */
    const completion = async (state: MessengerCodeState, secret: string, now: Date) => {
      let userId: string | null = null;
      if (state.status === 'confirmed' && state.confirmedBy) {
        // The contact may have been linked a moment ago, in another thread.
        await ctx.projections.catchUp();
        userId = ctx.models.users.userOfContact(state.confirmedBy.contactRef) ?? null;
      }
      return { type: 'CompleteMessengerSignIn' as const, data: { pollSecretHash: hashKey(secret), userId, now } };
    };
    const expiryOf = (state: MessengerCodeState) => (state.status === 'none' ? undefined : new Date(state.expiresAt).toISOString());
    const pollTokenParams = z.object({ pollToken: z.string() });

    // A GET only says how far the sign-in got (issue 47, login CSRF: a cross-site GET must not set
    // a session cookie): what the POST would do is decided, not recorded.
    app.get(
      '/messenger/:pollToken',
      { schema: { summary: 'Follows a sign-in through a messenger: pending until the code was sent, then confirmed (a GET never signs in)', security: [], params: pollTokenParams, response: { 200: messengerSignInStatusResponse } } },
      async (request, reply) => {
        const parsed = POLL_TOKEN.exec(request.params.pollToken);
        if (!parsed) return fail(reply, 400, MESSENGER_CODE_ERRORS.invalid);
        const [, codeRef, secret] = parsed as unknown as [string, string, string];
        const state = fold(messengerCodeDecider, (await ctx.store.readStream(messengerCodeStreamName(codeRef))).events as unknown as MessengerCodeEvent[]);
        const decision = messengerCodeDecider.decide(await completion(state, secret, new Date()), state);
        if (isDomainError(decision)) return fail(reply, 400, decision.message);
        const [event] = decision;
        if (event?.type === 'MessengerCodeRefused') return fail(reply, 400, MESSENGER_CODE_ERRORS[event.data.reason]);
        const expiresAt = expiryOf(state);
        const data = event?.type === 'MessengerSignInCompleted' && expiresAt !== undefined ? { status: 'confirmed' as const, expiresAt } : { status: 'pending' as const, expiresAt };
        return reply.header('cache-control', 'no-store').send({ success: true, data });
      },
    );

    app.post(
      '/messenger/:pollToken',
      { schema: { summary: 'Signs in through a messenger once the code was sent (the browser that asked posts its poll token): pending until then', security: [], params: pollTokenParams, response: { 200: messengerSignInResponse } } },
      async (request, reply) => {
        const parsed = POLL_TOKEN.exec(request.params.pollToken);
        if (!parsed) return fail(reply, 400, MESSENGER_CODE_ERRORS.invalid);
        const [, codeRef, secret] = parsed as unknown as [string, string, string];
        let code: MessengerCodeState = { status: 'none' };
        const now = new Date();
        const result = await handleCommand(
          ctx.store,
          messengerCodeStreamName(codeRef),
          messengerCodeDecider,
          async (state) => {
            code = state;
            return completion(state, secret, now);
          },
          { actor: 'anonymous', correlationId: request.id },
        );
        if (!result.ok) return fail(reply, 400, result.error.message);
        const [event] = result.events;
        if (event === undefined) return reply.header('cache-control', 'no-store').send({ success: true, data: { status: 'pending', expiresAt: expiryOf(code) } });
        if (event.type === 'MessengerCodeRefused') return fail(reply, 400, MESSENGER_CODE_ERRORS[event.data.reason]);
        if (event.type !== 'MessengerSignInCompleted') return fail(reply, 400, MESSENGER_CODE_ERRORS.invalid);
        const user = ctx.models.users.user(event.data.userId);
        if (!user) return fail(reply, 400, MESSENGER_CODE_ERRORS['contact-not-linked']);
        const session = await signInWithCookie(ctx, user.email, request, reply);
        return reply.header('cache-control', 'no-store').send({ success: true, data: { status: 'signed-in', sessionId: session.sessionId } });
      },
    );
  };
