import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RelayContext } from '../services/context.ts';
import type { RateLimitKind } from '../services/metrics.ts';
import { authenticate } from './authenticate.ts';
import { noteKeyUse } from './key-use.ts';
import type { CredentialView } from '../../projections/credentials/credentials-projection.ts';

export const AUTH_ERRORS = {
  missing: 'Missing API key',
  wrongHeader: 'API key not accepted in this header for its credential type',
  invalid: 'Invalid API key',
  noApps: 'API key is not associated with any apps',
  keyStoreUnavailable: 'Key store unavailable',
} as const;

/** `keyHash`: the presented key's hash, to tell later whether that key still works (a roll's overlap ends). */
export type Caller = { credential: CredentialView; appIds: string[]; keyHash: string };

/**
 * The 401/403 rules: no usable header → 401; a key in a header its type does not accept → 401;
 * a key of no live credential → 403 on send and poll (`unknownStatus`), 401 on verify.
 * While the read models cannot follow the event store → 503. A key that passes is noted as used
 * (in memory; recorded at most once an hour, key-use.ts).
 * Returns undefined after answering the request itself.
 */
export const requireCaller = (
  ctx: RelayContext,
  request: FastifyRequest,
  reply: FastifyReply,
  unknownStatus: 401 | 403,
): Caller | undefined => {
  if (!ctx.projections.healthy) {
    // The read models stopped following the event store: a deleted key might still look live.
    void reply.code(503).send({ error: AUTH_ERRORS.keyStoreUnavailable });
    return undefined;
  }
  const now = Date.now();
  const auth = authenticate(request.headers, ctx.models.credentials, ctx.models.apps, now);
  switch (auth.kind) {
    case 'ok':
      noteKeyUse(ctx, auth.credential, now);
      return { credential: auth.credential, appIds: auth.appIds, keyHash: auth.keyHash };
    case 'missing':
      void reply.code(401).send({ error: AUTH_ERRORS.missing });
      return undefined;
    case 'wrong-header':
      void reply.code(401).send({ error: AUTH_ERRORS.wrongHeader });
      return undefined;
    case 'unknown':
      void reply.code(unknownStatus).send({ error: AUTH_ERRORS.invalid });
      return undefined;
  }
};

/** A 429 per the interface: remaining 0 and the window's end in epoch ms. Counted per kind. */
export const sendRateLimited = (ctx: RelayContext, kind: RateLimitKind, reply: FastifyReply, resetAt: number) => {
  ctx.metrics.rateLimitRejections.inc({ kind });
  return reply
    .code(429)
    .header('X-RateLimit-Remaining', '0')
    .header('X-RateLimit-Reset', String(resetAt))
    .send({ error: 'Rate limit exceeded' });
};
