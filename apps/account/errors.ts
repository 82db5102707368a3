import type { FastifyReply } from 'fastify';
import type { DomainError } from '../../domain/shared/errors.ts';

export const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });

/** A 429 of the account API: `Retry-After` in whole seconds (at least 1) until the limit's window ends at `resetAt`. */
export const failLimited = (reply: FastifyReply, resetAt: number, error: string) =>
  fail(reply.header('retry-after', String(Math.max(1, Math.ceil((resetAt - Date.now()) / 1000)))), 429, error);

const STATUS_OF: Record<DomainError['code'], number> = {
  validation: 400,
  // The interface answers an unknown sub-resource with 400 (404 is for paths off the allowlist).
  not_found: 400,
  conflict: 409,
  illegal_state: 400,
  forbidden: 403,
  // A cap reached (keys, apps per user): the request is refused as the interface refuses bad bodies.
  limit: 400,
};

export const failDomain = (reply: FastifyReply, error: DomainError) => fail(reply, STATUS_OF[error.code], error.message);
