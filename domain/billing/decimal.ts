/** Exact decimal amounts as bigint in units of 10^-scale: prices and rates are never floats. */
const DECIMAL = /^(\d{1,15})(?:\.(\d{1,18}))?$/;

/** A non-negative decimal string (`5`, `5.00`, `0.0125`) in units of 10^-scale; undefined when it is not one or has more digits than the scale. */
export const parseDecimal = (text: string, scale: number): bigint | undefined => {
  const match = DECIMAL.exec(text.trim());
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > scale) return undefined;
  return BigInt(match[1]!) * 10n ** BigInt(scale) + BigInt(fraction.padEnd(scale, '0') || '0');
};

/** Units of 10^-scale as a decimal string with exactly `scale` digits after the point (`500n, 2` → `5.00`). */
export const formatDecimal = (units: bigint, scale: number): string => {
  if (scale === 0) return units.toString();
  const text = units.toString().padStart(scale + 1, '0');
  return `${text.slice(0, -scale)}.${text.slice(-scale)}`;
};

/** a / b rounded up, for non-negative a and positive b. */
export const divideUp = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;
