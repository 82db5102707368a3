import { z } from 'zod';
import { INVOICE_STATUSES } from '../../domain/invoice/events.ts';

/** The shapes of the billing routes' answers, for the account API's OpenAPI document (docs/billing.md). */
const decimal = z.string().describe('A decimal string (prices in the currency, amounts in the asset: they pass 2^53 in atomic units)');
const time = z.string().describe('ISO 8601');

export const configurationResponse = z.object({
  success: z.literal(true),
  data: z.object({
    currency: z.string().describe('ISO 4217'),
    annualDiscountPercent: z.number().int(),
    assets: z.array(
      z.object({
        asset: z.string().describe('e.g. XMR'),
        network: z.string().describe('mainnet, stagenet, testnet, regtest, or simulated'),
        rate: decimal.describe("The operator's price of one coin in the currency, fixed into each invoice at its creation"),
        decimals: z.number().int().describe('Atomic units: 10^-decimals of a coin'),
        requiredConfirmations: z.number().int(),
      }),
    ),
    plans: z.array(
      z.object({
        id: z.enum(['free', 'paid-monthly', 'paid-annual']),
        tier: z.enum(['free', 'paid']),
        period: z.enum(['monthly', 'annual']).nullable(),
        price: decimal,
        sendPerMinute: z.number().int(),
        pollPerMinute: z.number().int(),
      }),
    ),
    invoiceExpiresInSeconds: z.number().int(),
  }),
});

export const invoiceResponse = z.object({
  invoiceId: z.string(),
  status: z.enum(INVOICE_STATUSES).describe('pending, confirming, paid, cancelled (the interface) or expired (Relay)'),
  greenfieldStatus: z.enum(['New', 'Processing', 'Settled', 'Expired', 'Invalid']).describe("The same state by BTCPay Greenfield's name"),
  additionalStatus: z.enum(['None', 'PaidPartial', 'PaidOver', 'PaidLate']),
  planId: z.string(),
  period: z.enum(['monthly', 'annual']),
  price: decimal,
  currency: z.string(),
  asset: z.string(),
  network: z.string(),
  amount: decimal.describe('What to pay, in the asset'),
  address: z.string().describe("The invoice's own address"),
  paymentUri: z.string().describe('A URI a wallet opens with the address and amount filled in'),
  requiredConfirmations: z.number().int(),
  totalReceived: decimal,
  createdAt: time,
  expiresAt: time,
  monitoringExpiresAt: time,
  paidAt: time.nullable(),
  cancelledAt: time.nullable(),
  expiredAt: time.nullable(),
});

export const invoicesResponse = z.object({
  items: z.array(invoiceResponse),
  subscription: z
    .object({
      tier: z.enum(['free', 'paid']).describe("The user's send tier now"),
      paidUntil: time.nullable().describe('Where the paid time bought by invoices ends (null: none bought)'),
    })
    .describe("The paid time the user's invoices bought"),
});

export const cancelledInvoiceResponse = z.object({ success: z.literal(true), data: invoiceResponse });

export const paymentStatusResponse = z.object({
  invoiceId: z.string(),
  status: z.enum(INVOICE_STATUSES),
  additionalStatus: z.enum(['None', 'PaidPartial', 'PaidOver', 'PaidLate']),
  asset: z.string(),
  amount: decimal,
  totalReceived: decimal,
  amountDue: decimal,
  overpaidBy: decimal.describe('For the operator to refund'),
  lateReceived: decimal.describe('Paid after the invoice was final: for the operator to refund'),
  requiredConfirmations: z.number().int(),
  payments: z.array(z.object({ txid: z.string(), amount: decimal, confirmations: z.number().int(), late: z.boolean(), receivedAt: time })),
  expiresAt: time,
  paidAt: time.nullable(),
});
