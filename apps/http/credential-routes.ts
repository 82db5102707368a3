/**
 * The keys page's own routes (issue 50 §1, "Keys"), Relay's, outside the account API's prefix
 * (whose credential routes and objects are the interface's): same-origin, JSON, the session cookie,
 * the key's owner only (anyone else's key, or none, reads as not found).
 *
 * - `GET /dashboard/credentials/activity`: each of the user's keys' last recorded use (to within
 *   the hour, apps/api/key-use.ts) and, after a roll, until when its old secret still works.
 * - `POST /dashboard/credentials/roll {credentialId, overlapSeconds}`: a new secret for the same
 *   credential (same id, name, apps), shown once in the answer; the old secret keeps working for
 *   the overlap chosen (CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS, an hour, to 7 days), then only the new
 *   one does (`CredentialRolled`). Rolling again ends any older secret at once.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { credentialDecider, credentialStreamName } from '../../domain/credential/decider.ts';
import { generateApiKey, hashKey, keyPreview } from '../../infra/crypto/keys.ts';
import type { CredentialView } from '../../projections/credentials/credentials-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { isCrossOrigin, PROXY_ERRORS } from '../dashboard/proxy.ts';
import type { RelayContext } from '../services/context.ts';
import { fail } from './app-activity-routes.ts';
import { cookieUser, withCookies } from './dashboard-session.ts';

const rollBody = z.object({
  credentialId: z.string({ message: 'Missing required field: credentialId' }).min(1, 'Missing required field: credentialId').max(64, 'Credential not found'),
  overlapSeconds: z.number({ message: 'Missing required field: overlapSeconds' }).int('Invalid overlapSeconds: must be a whole number of seconds'),
});

/** What the keys page shows of a key beside the account API's credential object. */
export interface KeyActivity {
  credentialId: string;
  /** The first use of the hour the key was last used in (null: never, since it was made). */
  lastUsedAt: string | null;
  /** While a rolled key's old secret still works: until when (null otherwise). */
  previousKeyUntil: string | null;
}

export const keyActivity = (view: CredentialView, now: number): KeyActivity => ({
  credentialId: view.credentialId,
  lastUsedAt: view.lastUsedAt ?? null,
  previousKeyUntil: view.previousKeyUntil !== undefined && Date.parse(view.previousKeyUntil) > now ? view.previousKeyUntil : null,
});

export const credentialRoutes = (ctx: RelayContext) => async (app: FastifyInstance) => {
  await withCookies(app);

  app.get('/dashboard/credentials/activity', { schema: { hide: true } }, async (request, reply) => {
    const user = await cookieUser(ctx, app, request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const now = Date.now();
    const items = ctx.models.credentials.credentialsOf(user.id).map((view) => keyActivity(view, now));
    return reply.header('cache-control', 'no-store').send({ success: true, data: { items } });
  });

  app.post('/dashboard/credentials/roll', { schema: { hide: true } }, async (request, reply) => {
    if (isCrossOrigin(request.headers.origin, request.headers.host)) return fail(reply, 400, PROXY_ERRORS.crossOrigin);
    const user = await cookieUser(ctx, app, request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const parsed = rollBody.safeParse(request.body ?? {});
    if (!parsed.success) return fail(reply, 400, parsed.error.issues[0]!.message);
    const { credentialId, overlapSeconds } = parsed.data;
    const secret = generateApiKey();
    const result = await handleCommand(
      ctx.store,
      credentialStreamName(credentialId),
      credentialDecider,
      {
        type: 'RollCredential',
        data: {
          userId: user.id,
          keyHash: hashKey(secret),
          secretEncrypted: ctx.secrets.encrypt(secret),
          keyPreview: keyPreview(secret),
          overlapMs: overlapSeconds * 1000,
          minOverlapMs: ctx.config.CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS * 1000,
          now: new Date(),
        },
      },
      { actor: `user:${user.id}`, correlationId: request.id },
    );
    if (!result.ok) return fail(reply, result.error.code === 'not_found' ? 404 : 400, result.error.message);
    // Read-your-own-write: the new key works from this process's very next request on.
    await ctx.projections.catchUp();
    const rolled = result.events[0]!;
    if (rolled.type !== 'CredentialRolled') return fail(reply, 500, 'Internal server error');
    const { keyPreview: preview, previousKeyUntil } = rolled.data;
    return reply.header('cache-control', 'no-store').send({ success: true, data: { credentialId, keyPreview: preview, previousKeyUntil, secret } });
  });
};
