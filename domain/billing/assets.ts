/** The atomic units of each asset Relay can take: 10^-decimals of one coin (piconero for XMR, satoshi, litoshi). */
export const ASSET_DECIMALS: Readonly<Record<string, number>> = { XMR: 12, BTC: 8, LTC: 8 };

export const decimalsOf = (asset: string): number => {
  const decimals = ASSET_DECIMALS[asset];
  if (decimals === undefined) throw new Error(`No known decimals for the asset ${asset}`);
  return decimals;
};
