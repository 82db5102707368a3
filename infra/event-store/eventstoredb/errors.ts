import { ErrorType, convertToCommandError, isCommandError } from '@eventstore/db-client';
import { DataKeyGoneError, EventStoreUnavailableError, ExpectedVersionConflictError } from '../port.ts';
import { FeedEndedError } from './live-subscription.ts';

const unavailableTypes: ReadonlySet<string> = new Set([
  ErrorType.UNAVAILABLE,
  ErrorType.CANCELLED,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.TIMEOUT,
  ErrorType.NOT_LEADER,
]);

/** Whether an error means "the server cannot serve now": connection, availability, timeouts, leader change. */
export const isUnavailable = (error: unknown): boolean => {
  if (error instanceof EventStoreUnavailableError || error instanceof FeedEndedError) return true;
  if (!(error instanceof Error)) return false;
  // Raw gRPC errors (e.g. from the server-features call before an append) are converted first.
  const converted = convertToCommandError(error);
  return isCommandError(converted) && unavailableTypes.has(converted.type);
};

/** Unavailability becomes EventStoreUnavailableError; conflicts, bad input and other errors pass unchanged. */
export const toStoreError = (error: unknown): unknown => {
  if (error instanceof EventStoreUnavailableError || error instanceof ExpectedVersionConflictError || error instanceof DataKeyGoneError) return error;
  if (error instanceof RangeError || error instanceof TypeError) return error;
  if (!isUnavailable(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new EventStoreUnavailableError(`EventStoreDB event store failure: ${message}`, { cause: error });
};
