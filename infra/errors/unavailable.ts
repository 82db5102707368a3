/**
 * A backing service (event store, broker, key vault, messenger daemon) cannot serve right now:
 * the caller may try again later. Every adapter reports such failures as a subclass of this one,
 * and the HTTP layer answers them with the interface's 503, checked by type.
 */
export class UnavailableError extends Error {
  override readonly name: string = 'UnavailableError';
}

export const isUnavailable = (error: unknown): error is UnavailableError => error instanceof UnavailableError;
