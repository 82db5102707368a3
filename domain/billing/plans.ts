import type { SubscriptionPeriod } from '../user/events.ts';
import { divideUp, formatDecimal } from './decimal.ts';

/** Prices are kept in cents (two decimals) of the configured currency. */
export const PRICE_SCALE = 2;

export interface BillingPrices {
  /** ISO 4217 code, e.g. `USD`. */
  readonly currency: string;
  /** The paid tier for 30 days, in cents. */
  readonly paidMonthlyCents: bigint;
  /** Percent off twelve months when paying for a year. */
  readonly annualDiscountPercent: number;
}

export interface Plan {
  readonly id: 'free' | 'paid-monthly' | 'paid-annual';
  readonly tier: 'free' | 'paid';
  readonly period: SubscriptionPeriod | null;
  /** In cents; 0 for free. */
  readonly priceCents: bigint;
}

/** The plans: free, and the paid tier by the month or by the year (twelve months less the discount, rounded up to the cent). */
export const plansOf = (prices: BillingPrices): Plan[] => [
  { id: 'free', tier: 'free', period: null, priceCents: 0n },
  { id: 'paid-monthly', tier: 'paid', period: 'monthly', priceCents: prices.paidMonthlyCents },
  { id: 'paid-annual', tier: 'paid', period: 'annual', priceCents: divideUp(prices.paidMonthlyCents * 12n * BigInt(100 - prices.annualDiscountPercent), 100n) },
];

/** A plan an invoice can buy: a paid one. */
export const purchasablePlan = (prices: BillingPrices, planId: string): (Plan & { period: SubscriptionPeriod }) | undefined => {
  const plan = plansOf(prices).find((p) => p.id === planId);
  return plan && plan.period !== null ? (plan as Plan & { period: SubscriptionPeriod }) : undefined;
};

export const formatPrice = (cents: bigint): string => formatDecimal(cents, PRICE_SCALE);

/**
 * What a price costs in an asset, fixed when the invoice is made: `priceCents` of the currency at
 * `rateUnits` (the currency's price of one whole coin, in units of 10^-rateScale), in the asset's
 * atomic units (10^-decimals of a coin), rounded up so the operator is never short by rounding.
 */
export const assetAmountOf = (priceCents: bigint, rate: { units: bigint; scale: number }, decimals: number): bigint =>
  divideUp(priceCents * 10n ** BigInt(decimals) * 10n ** BigInt(rate.scale), rate.units * 10n ** BigInt(PRICE_SCALE));
