import { randomInt } from 'node:crypto';
import { hashKey } from '../../../infra/crypto/keys.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import type { RelayContext } from '../../boot/context.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';

/** Crockford's base32 without the letters that read as others. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A recovery code: 20 characters of base32 (100 bits) in four groups, `7K2QF-…`. */
export const newRecoveryCode = (): string =>
  Array.from({ length: 4 }, () => Array.from({ length: 5 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')).join('-');

/** The code as typed (any case, with or without dashes and spaces), hashed: only the hash is kept. */
export const recoveryCodeHash = (code: string): string =>
  hashKey(code.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1'));

/**
 * `POST /recovery-code`: a new recovery code for the session's user, shown this once (only its
 * hash is kept); the one before stops working. It signs the user in once at `POST
 * /dashboard/auth/recover` when they cannot read their mailbox.
 */
export const recoveryCodeRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.post('/recovery-code', { schema: { summary: 'A new recovery code, shown once; the one before stops working' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const code = newRecoveryCode();
      const now = new Date();
      const result = await handleCommand(ctx.store, userStreamName(user.id), userDecider, { type: 'GenerateRecoveryCode', data: { codeHash: recoveryCodeHash(code), now } }, { actor: `user:${user.id}`, correlationId: request.id });
      if (!result.ok) return failDomain(reply, result.error);
      return reply.header('cache-control', 'no-store').send({ success: true, data: { recoveryCode: code, generatedAt: now.toISOString() } });
    });
  };
