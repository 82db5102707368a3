import { prefixedNames } from '../../domain/shared/prefixed-names.ts';

/**
 * The public API's rate-limit buckets of a credential, per the interface's Limits section: one per
 * endpoint (`poll:<credentialId>`, `send:<credentialId>`, `verify:<credentialId>`), each name made once.
 */
export const buckets = {
  poll: prefixedNames('poll:'),
  send: prefixedNames('send:'),
  verify: prefixedNames('verify:'),
} as const;
