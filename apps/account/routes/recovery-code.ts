import { groupCode, normaliseCrockford } from '../../../domain/shared/crockford.ts';
import { hashKey } from '../../../infra/crypto/keys.ts';
import { randomCrockford } from '../../../infra/crypto/random-code.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../services/context.ts';
import { failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';
import { handleUserCommand } from '../user-command.ts';
import { recoveryCodeResponse } from '../response-schemas.ts';

/** A recovery code: 20 characters of base32 (100 bits) in four groups, `7K2QF-…`. */
export const newRecoveryCode = (): string => groupCode(randomCrockford(20), 5);

/** The code as typed (any case, with or without dashes and spaces), hashed: only the hash is kept. */
export const recoveryCodeHash = (code: string): string => hashKey(normaliseCrockford(code));

/**
 * `POST /recovery-code`: a new recovery code for the session's user, shown this once (only its
 * hash is kept); the one before stops working. It signs the user in once at `POST
 * /dashboard/auth/recover` when they cannot read their mailbox.
 */
export const recoveryCodeRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.post('/recovery-code', { schema: { summary: 'A new recovery code, shown once; the one before stops working', response: { 200: recoveryCodeResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const code = newRecoveryCode();
      const now = new Date();
      const result = await handleUserCommand(ctx, user, request, { type: 'GenerateRecoveryCode', data: { codeHash: recoveryCodeHash(code), now } });
      if (!result.ok) return failDomain(reply, result.error);
      return reply.header('cache-control', 'no-store').send({ success: true, data: { recoveryCode: code, generatedAt: now.toISOString() } });
    });
  };
