import { decimalsOf } from '../../domain/billing/assets.ts';
import { parseDecimal } from '../../domain/billing/decimal.ts';
import { PRICE_SCALE, type BillingPrices } from '../../domain/billing/plans.ts';
import type { PaymentProcessor } from '../../infra/payment/port.ts';
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

/** The configured processor, its adapter loaded only when it is the one configured (a Relay without billing loads neither). */
const openProcessor = async (config: Config): Promise<PaymentProcessor | undefined> => {
  if (config.PAYMENT_PROCESSOR === 'simulator') {
    const { SimulatorPaymentProcessor } = await import('../../infra/payment/simulator/simulator-payment-processor.ts');
    return new SimulatorPaymentProcessor({ dataDir: config.dataDir });
  }
  if (config.PAYMENT_PROCESSOR === 'monero') {
    const { MoneroPaymentProcessor } = await import('../../infra/payment/monero/monero-payment-processor.ts');
    return new MoneroPaymentProcessor({ walletRpcUrl: config.MONERO_WALLET_RPC_URL!, network: config.MONERO_NETWORK, accountIndex: config.MONERO_ACCOUNT_INDEX });
  }
  if (config.PAYMENT_PROCESSOR === 'bitcoin') {
    const { BitcoinPaymentProcessor } = await import('../../infra/payment/bitcoin/bitcoin-payment-processor.ts');
    return new BitcoinPaymentProcessor({ rpcUrl: config.BITCOIN_RPC_URL!, network: config.BITCOIN_NETWORK, asset: config.BITCOIN_ASSET });
  }
  return undefined;
};

export const openBilling = async (config: Config): Promise<Billing> => {
  const prices: BillingPrices = {
    currency: config.BILLING_CURRENCY,
    paidMonthlyCents: parseDecimal(config.BILLING_PAID_MONTHLY_PRICE, PRICE_SCALE)!,
    annualDiscountPercent: config.BILLING_ANNUAL_DISCOUNT_PERCENT,
  };
  const processor = await openProcessor(config);
  return {
    prices,
    processor,
    rate: processor && config.BILLING_RATE ? { units: parseDecimal(config.BILLING_RATE, RATE_SCALE)!, scale: RATE_SCALE } : undefined,
    decimals: processor ? decimalsOf(processor.asset) : undefined,
  };
};
