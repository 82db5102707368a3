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
export const describeIssue = (error: z.ZodError, body: unknown): string => {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request body';
  const field = issue.path.join('.');
  if (field === '') return 'Request body must be a JSON object';
  let value: unknown = body;
  for (const key of issue.path) value = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  if (value === undefined) return `Missing required field: ${field}`;
  if (issue.message.startsWith('Invalid') || issue.message.startsWith('Missing')) return issue.message;
  return `Invalid field ${field}: ${issue.message}`;
};
