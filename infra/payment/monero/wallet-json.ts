import { isInteger, parse, stringify } from 'lossless-json';

/**
 * JSON with exact integers, for monero-wallet-rpc: amounts and balances are integers of
 * piconero that pass 2^53, which `JSON.parse` would round (Node 20's reviver cannot see the
 * source text). Through lossless-json: every integer literal is read as a bigint, other numbers
 * (fractions, exponents) as numbers; bigints are written as JSON integers.
 */
export type WalletJson = null | boolean | number | bigint | string | WalletJson[] | { [key: string]: WalletJson };

export class WalletJsonError extends SyntaxError {
  override readonly name = 'WalletJsonError';
}

const numberOf = (literal: string): number | bigint => (isInteger(literal) ? BigInt(literal) : Number(literal));

export const parseWalletJson = (text: string): WalletJson => {
  try {
    return parse(text, null, numberOf) as WalletJson;
  } catch (error) {
    // Not JSON, or nested past what the stack holds (a RangeError): either way, not an answer.
    throw new WalletJsonError(error instanceof Error ? error.message : String(error));
  }
};

export const stringifyWalletJson = (value: unknown): string => {
  const walk = (item: unknown): void => {
    if (typeof item === 'number' && !Number.isFinite(item)) throw new TypeError('JSON has no NaN or Infinity');
    if (item !== null && typeof item === 'object') for (const inner of Object.values(item)) walk(inner);
  };
  walk(value);
  const text = stringify(value);
  if (text === undefined) throw new TypeError(`Cannot write ${typeof value} as JSON`);
  return text;
};
