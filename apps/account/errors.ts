import type { FastifyReply } from 'fastify';
import type { DomainError } from '../../domain/shared/errors.ts';

export const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });

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
