import type { FastifyReply } from 'fastify';
import type { z } from 'zod';
import type { DomainError } from '../../domain/shared/errors.ts';

export const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });

const STATUS_OF: Record<DomainError['code'], number> = {
  validation: 400,
  // The interface answers an unknown sub-resource with 400 (404 is for paths off the allowlist).
  not_found: 400,
  conflict: 409,
  illegal_state: 400,
  forbidden: 403,
};

export const failDomain = (reply: FastifyReply, error: DomainError) => fail(reply, STATUS_OF[error.code], error.message);

/** One line naming the first problem of a body, in the interface's words where it has some. */
export const describeIssue = (error: z.ZodError): string => {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request body';
  const field = issue.path.join('.');
  if (field === '') return 'Request body must be a JSON object';
  const missing = issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined;
  if (missing) return `Missing required field: ${field}`;
  return issue.message.startsWith('Invalid') ? issue.message : `Invalid field ${field}: ${issue.message}`;
};
