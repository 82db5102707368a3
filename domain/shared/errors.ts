/** A rejected command, returned as a value (never thrown) by a decider. */
/** `limit`: a cap on how many of something one user may have. */
export type DomainErrorCode = 'validation' | 'not_found' | 'conflict' | 'illegal_state' | 'forbidden' | 'limit';

export interface DomainError {
  readonly kind: 'domain_error';
  readonly code: DomainErrorCode;
  readonly message: string;
}

export const domainError = (code: DomainErrorCode, message: string): DomainError => ({
  kind: 'domain_error',
  code,
  message,
});

export const isDomainError = (value: unknown): value is DomainError =>
  typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'domain_error';
