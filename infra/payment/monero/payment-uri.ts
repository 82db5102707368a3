/** Piconero in one XMR. */
export const PICONERO_PER_XMR = 1_000_000_000_000n;

/** An amount of piconero as XMR in decimal: `1500000000000n` → `1.5`, exact at any size. */
export const formatXmr = (piconero: bigint): string => {
  if (piconero < 0n) throw new RangeError('An amount of XMR cannot be negative');
  const whole = piconero / PICONERO_PER_XMR;
  let fraction = (piconero % PICONERO_PER_XMR).toString().padStart(12, '0');
  while (fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return fraction ? `${whole}.${fraction}` : String(whole);
};

/**
 * A payment URI in the `monero:` scheme Monero's wallets open (the same as monero-wallet-rpc's
 * `make_uri`): the address, `tx_amount` in XMR, `tx_description` percent-encoded.
 */
export const moneroPaymentUri = (address: string, amount: bigint, description: string): string =>
  `monero:${address}?tx_amount=${formatXmr(amount)}${description ? `&tx_description=${encodeURIComponent(description)}` : ''}`;
