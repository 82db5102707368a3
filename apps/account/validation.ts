import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { textError, textProblem } from '../../domain/shared/text.ts';
import { ClientError } from '../http/error-handler.ts';


/**
 * Fastify validates every body (and query) with the route's zod schema; a failure becomes a
 * ClientError (a 400 in the interface's shape) whose message names the first problem (`Missing required field: name`). An absent
 * body is validated as `{}`, so that its required fields are reported as missing.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data) => {
    const input = data ?? {};
    const result = schema.safeParse(input);
    return result.success ? { value: result.data } : { error: new ClientError(describeIssue(result.error, input)) };
  };

/** One line naming the first problem of a body, in the interface's words where it has some. */
export const describeIssue = (error: z.ZodError, body: unknown): string => {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request body';
  const field = issue.path.join('.');
  if (field === '') return 'Request body must be a JSON object';
  let value: unknown = body;
  for (const key of issue.path) value = typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  if (value === undefined) return `Missing required field: ${field}`;
  if (issue.code === 'custom' || issue.message.startsWith('Invalid') || issue.message.startsWith('Missing')) return issue.message;
  return `Invalid field ${field}: ${issue.message}`;
};

/** A refinement for a text field capped at `max` characters (`Name exceeds 100 character limit`). */
export const boundedText =
  (label: string, max: number, oneLine = false) =>
  (value: string, ctx: z.RefinementCtx): void => {
    const problem = textProblem(value, max, oneLine);
    if (problem) ctx.addIssue({ code: 'custom', message: textError(label, problem, max) });
  };
