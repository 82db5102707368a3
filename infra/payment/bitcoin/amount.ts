/**
 * Amounts of the Bitcoin family, exactly: Bitcoin Core (and litecoind) write amounts in JSON as
 * decimals of the coin (`0.03333334` LTC), which a float may not hold (0.1 + 0.2). They are read
 * from their text (bitcoin-json.ts keeps it) into atomic units (satoshi, litoshi: 10^-8 of a
 * coin) as bigint, and written back from bigint, by string arithmetic only.
 */

/** Atomic units in one coin (satoshi per BTC, litoshi per LTC). */
export const ATOMIC_PER_COIN = 100_000_000n;
export const COIN_DECIMALS = 8;

const DECIMAL = /^(-)?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/**
 * A decimal amount of coins as atomic units: `"0.03333334"` → `3333334n`, `"21"` → `2100000000n`,
 * `"1e-8"` → `1n`. Throws a RangeError when the text is not a decimal number, or when it has a
 * part finer than an atomic unit (no rounding, ever).
 */
export const atomicOfDecimal = (text: string, decimals = COIN_DECIMALS): bigint => {
  const match = DECIMAL.exec(text.trim());
  if (!match) throw new RangeError(`Not a decimal amount: ${JSON.stringify(text.slice(0, 40))}`);
  const [, sign, whole = '', fraction = '', exponentText] = match;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) throw new RangeError(`Amount out of range: ${text.slice(0, 40)}`);
  // The digits as an integer, and where the decimal point goes: digits × 10^(shift).
  const digits = `${whole}${fraction}`.replace(/^0+(?=\d)/, '');
  const shift = exponent - fraction.length + decimals;
  let atomic: bigint;
  if (shift >= 0) atomic = BigInt(digits) * 10n ** BigInt(shift);
  else {
    const cut = digits.length + shift;
    const dropped = cut > 0 ? digits.slice(cut) : digits;
    if (/[1-9]/.test(dropped)) throw new RangeError(`Amount finer than 10^-${decimals}: ${text.slice(0, 40)}`);
    atomic = cut > 0 ? BigInt(digits.slice(0, cut)) : 0n;
  }
  return sign ? -atomic : atomic;
};

/** Atomic units as a decimal of coins without trailing zeros: `150000000n` → `1.5`, `1n` → `0.00000001`. */
export const decimalOfAtomic = (atomic: bigint, decimals = COIN_DECIMALS): string => {
  const negative = atomic < 0n;
  const magnitude = negative ? -atomic : atomic;
  const unit = 10n ** BigInt(decimals);
  const whole = magnitude / unit;
  const fraction = (magnitude % unit).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
};

/** The URI scheme of an asset's wallets (BIP21 and its copies): BTC → bitcoin, LTC → litecoin. */
export const uriSchemeOf = (asset: string): string => ({ BTC: 'bitcoin', LTC: 'litecoin' })[asset.toUpperCase()] ?? asset.toLowerCase();

/**
 * A BIP21 payment URI (`litecoin:<address>?amount=0.5&label=…`): the amount in coins, the
 * description as the label, percent-encoded.
 */
export const bip21PaymentUri = (scheme: string, address: string, amount: bigint, description: string): string => {
  if (amount <= 0n) throw new RangeError('A payment amount must be more than zero');
  return `${scheme}:${address}?amount=${decimalOfAtomic(amount)}${description ? `&label=${encodeURIComponent(description)}` : ''}`;
};
