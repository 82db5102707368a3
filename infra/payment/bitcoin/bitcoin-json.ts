import { isInteger, LosslessNumber, parse } from 'lossless-json';
import { atomicOfDecimal } from './amount.ts';

/**
 * JSON as Bitcoin Core writes it, numbers kept as their text (lossless-json's LosslessNumber):
 * amounts are decimals of the coin (`0.03333334`) that must not go through a float, and are read
 * from that text into atomic units (amount.ts).
 */
export type RpcJson = null | boolean | string | LosslessNumber | RpcJson[] | { [key: string]: RpcJson };
export type RpcObject = { [key: string]: RpcJson };

export class RpcJsonError extends SyntaxError {
  override readonly name = 'RpcJsonError';
}

export const parseRpcJson = (text: string): RpcJson => {
  try {
    return parse(text) as RpcJson;
  } catch (error) {
    // Not JSON, or nested past what the stack holds (a RangeError): either way, not an answer.
    throw new RpcJsonError(error instanceof Error ? error.message : String(error));
  }
};

export const isRpcObject = (value: RpcJson | undefined): value is RpcObject =>
  value !== null && value !== undefined && typeof value === 'object' && !Array.isArray(value) && !(value instanceof LosslessNumber);

/** An integer (a count, a height, a time) as a number, or undefined when the value is not a safe integer. */
export const integerOf = (value: RpcJson | undefined): number | undefined => {
  if (!(value instanceof LosslessNumber) || !isInteger(value.value)) return undefined;
  const number = Number(value.value);
  return Number.isSafeInteger(number) ? number : undefined;
};

/** An amount in coins (a JSON decimal) as atomic units, or undefined when it is no number or finer than one unit. */
export const atomicAmountOf = (value: RpcJson | undefined): bigint | undefined => {
  if (!(value instanceof LosslessNumber)) return undefined;
  try {
    return atomicOfDecimal(value.value);
  } catch {
    return undefined;
  }
};
