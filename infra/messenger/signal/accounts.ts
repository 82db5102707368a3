/** The identities signal-cli's `listAccounts` names: each account's number and, when given, its ACI. */
export const identitiesOfAccounts = (result: unknown): string[] =>
  Array.isArray(result)
    ? result.flatMap((a: { number?: unknown; aci?: unknown; uuid?: unknown }) => [a?.number, a?.aci, a?.uuid].filter((v): v is string => typeof v === 'string'))
    : [];

/** The numbers of signal-cli's `listAccounts` (what `subscribeReceive` takes as `account`). */
export const numbersOfAccounts = (result: unknown): string[] =>
  Array.isArray(result) ? result.flatMap((a: { number?: unknown }) => (typeof a?.number === 'string' ? [a.number] : [])) : [];
