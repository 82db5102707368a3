import { decimalsOf } from '../../domain/billing/assets.ts';
import { parseDecimal } from '../../domain/billing/decimal.ts';
import { PRICE_SCALE, type BillingPrices } from '../../domain/billing/plans.ts';
import { MoneroPaymentProcessor } from '../../infra/payment/monero/monero-payment-processor.ts';
import type { PaymentProcessor } from '../../infra/payment/port.ts';
import { SimulatorPaymentProcessor } from '../../infra/payment/simulator/simulator-payment-processor.ts';
import type { Config } from './config.ts';

/** The scale of BILLING_RATE: at most eight decimals. */
export const RATE_SCALE = 8;

/** What invoices are priced and paid with, from the configuration (docs/billing.md). */
export interface Billing {
  readonly prices: BillingPrices;
  /** Undefined when PAYMENT_PROCESSOR=none: no asset is offered. */
  readonly processor: PaymentProcessor | undefined;
  /** The currency's price of one coin of the processor's asset. */
  readonly rate: { readonly units: bigint; readonly scale: number } | undefined;
  readonly decimals: number | undefined;
}

export const openBilling = (config: Config): Billing => {
  const prices: BillingPrices = {
    currency: config.BILLING_CURRENCY,
    paidMonthlyCents: parseDecimal(config.BILLING_PAID_MONTHLY_PRICE, PRICE_SCALE)!,
    annualDiscountPercent: config.BILLING_ANNUAL_DISCOUNT_PERCENT,
  };
  const processor: PaymentProcessor | undefined =
    config.PAYMENT_PROCESSOR === 'simulator'
      ? new SimulatorPaymentProcessor({ dataDir: config.dataDir })
      : config.PAYMENT_PROCESSOR === 'monero'
        ? new MoneroPaymentProcessor({ walletRpcUrl: config.MONERO_WALLET_RPC_URL!, network: config.MONERO_NETWORK, accountIndex: config.MONERO_ACCOUNT_INDEX })
        : undefined;
  return {
    prices,
    processor,
    rate: processor && config.BILLING_RATE ? { units: parseDecimal(config.BILLING_RATE, RATE_SCALE)!, scale: RATE_SCALE } : undefined,
    decimals: processor ? decimalsOf(processor.asset) : undefined,
  };
};
