import { DataKeyGoneError, EventStoreUnavailableError, ExpectedVersionConflictError } from '../port.ts';

export const sqlStateOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

export const isUniqueViolation = (error: unknown, constraint: string): boolean =>
  sqlStateOf(error) === '23505' && (error as { constraint?: unknown }).constraint === constraint;

/** SQLSTATE the append function raises when a key to destroy is gone (detail: the ids, JSON). */
export const KEY_GONE_STATE = 'RK001';

/** The DataKeyGoneError of an RK001 raised by append_events, else undefined. */
export const keyGoneError = (error: unknown): DataKeyGoneError | undefined => {
  if (sqlStateOf(error) !== KEY_GONE_STATE) return undefined;
  const detail = (error as { detail?: unknown }).detail;
  const ids = typeof detail === 'string' ? (JSON.parse(detail) as string[]) : [];
  return new DataKeyGoneError(ids);
};

/** SQLSTATE classes meaning "the store cannot serve now": connection, resources, shutdown/cancel, system. */
const unavailableClasses = new Set(['08', '53', '57', '58', 'XX', '40']);

/**
 * Connection-level failures (no SQLSTATE: refused, reset, terminated, connect timeout, pool
 * ended) and unavailable SQLSTATE classes become EventStoreUnavailableError; statement errors
 * (constraints, bad data) and our own errors pass unchanged.
 */
export const toStoreError = (error: unknown): unknown => {
  if (error instanceof EventStoreUnavailableError || error instanceof ExpectedVersionConflictError || error instanceof DataKeyGoneError) return error;
  if (error instanceof RangeError || error instanceof TypeError) return error;
  const state = sqlStateOf(error);
  if (state !== undefined && !unavailableClasses.has(state.slice(0, 2)) && state !== '55P03') return error;
  if (!(error instanceof Error)) return error;
  return new EventStoreUnavailableError(`PostgreSQL event store failure${state ? ` (${state})` : ''}: ${error.message}`, {
    cause: error,
  });
};
