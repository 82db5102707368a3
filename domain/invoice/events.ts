/**
 * On stream `invoice-<invoiceId>`: an invoice for a plan, paid in a crypto asset to an address of
 * its own (a Monero subaddress), advanced by what the payment processor reports. The rules, and
 * what becomes of odd payments, are in decider.ts and docs/billing.md.
 *
 * Amounts are decimal strings of the asset's atomic units (piconero for XMR): they pass 2^53.
 * Times are ISO 8601 strings. The pay-to address is recorded in clear: it is the merchant's, not
 * a contact's.
 */

export const INVOICE_PERIODS = ['monthly', 'annual'] as const;
export type InvoicePeriod = (typeof INVOICE_PERIODS)[number];

/** `pending`, `confirming`, `paid` and `cancelled` are the interface's; `expired` is Relay's. */
export const INVOICE_STATUSES = ['pending', 'confirming', 'paid', 'cancelled', 'expired'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** The same states by the names of BTCPay Server's Greenfield API, which most merchants know. */
export const GREENFIELD_STATUS = {
  pending: 'New',
  confirming: 'Processing',
  paid: 'Settled',
  expired: 'Expired',
  cancelled: 'Invalid',
} as const satisfies Record<InvoiceStatus, string>;

/** Greenfield's `additionalStatus`: what is odd about the money an invoice received. */
export type InvoiceAdditionalStatus = 'None' | 'PaidPartial' | 'PaidOver' | 'PaidLate';

/** The states after which a payment no longer counts toward the invoice. */
export type InvoiceFinalStatus = Extract<InvoiceStatus, 'paid' | 'cancelled' | 'expired'>;

/** What is recorded of one payment (one transaction's outputs to the invoice's address). */
export interface InvoicePaymentData {
  invoiceId: string;
  /** The processor's id of the payment: the transaction and its outputs to this address (deduplication key). */
  paymentId: string;
  txid: string;
  /** Atomic units. */
  amount: string;
  /** As the processor reported them when the payment was first seen (0: in the pool). */
  confirmations: number;
  /** When the payment reached the processor (pool arrival, or its block's time): what "in time" is judged by. */
  receivedAt: string;
  /** When Relay recorded it. */
  seenAt: string;
}

export interface InvoiceCreatedData {
  invoiceId: string;
  userId: string;
  planId: string;
  period: InvoicePeriod;
  /** The crypto asset paid in, e.g. `XMR`. */
  asset: string;
  /** Its network, e.g. `mainnet`, `stagenet`, `regtest`, `simulated`. */
  network: string;
  /** What the customer pays, in the asset's atomic units (Greenfield's payment method `amount`). */
  amount: string;
  /** The plan's price in `currency` as a decimal string, e.g. `5.00` (Greenfield's invoice `amount`). */
  price: string;
  currency: string;
  /** Where to pay (Greenfield's `destination`): the invoice's own address. */
  address: string;
  /** The address's index in the merchant's wallet (a Monero subaddress's minor index). */
  addressIndex: number;
  /** A URI a wallet app opens with address and amount filled in (Greenfield's `paymentLink`). */
  paymentUri: string;
  /** Confirmations every counted payment needs before the invoice is paid. */
  requiredConfirmations: number;
  /** After it, an invoice that has not received its amount expires (Greenfield's `expirationTime`). */
  expiresAt: string;
  /** After it, an invoice whose payments are still confirming expires too (Greenfield's `monitoringExpiration`). */
  monitoringExpiresAt: string;
  createdAt: string;
}

export type InvoiceEvent =
  | { type: 'InvoiceCreated'; data: InvoiceCreatedData }
  /** A payment that counts toward the invoice. `totalReceived`: all counted payments with this one. */
  | { type: 'InvoicePaymentSeen'; data: InvoicePaymentData & { totalReceived: string } }
  /**
   * A payment that arrived after the invoice was paid, cancelled or expired: it does not count,
   * and all of it is for the operator to refund.
   */
  | { type: 'InvoicePaymentReceivedLate'; data: InvoicePaymentData & { invoiceStatus: InvoiceFinalStatus } }
  /** A known payment's confirmations changed: more blocks, or fewer after a reorganisation. */
  | { type: 'InvoicePaymentUpdated'; data: { invoiceId: string; paymentId: string; txid: string; confirmations: number; previousConfirmations: number; updatedAt: string } }
  /** The counted payments reached the amount; they wait for their confirmations (Greenfield: Processing). */
  | { type: 'InvoiceConfirming'; data: { invoiceId: string; totalReceived: string; confirmingAt: string } }
  /**
   * Confirmed payments reached the amount (Greenfield: Settled). `amountPaid`: all counted
   * payments, confirmed or not; `overpaidBy`: what exceeds the amount, for the operator to refund.
   */
  | { type: 'InvoicePaid'; data: { invoiceId: string; amountPaid: string; overpaidBy: string; paidAt: string } }
  /** By its owner, while pending. `totalReceived`: what it had received, all of it to refund. */
  | { type: 'InvoiceCancelled'; data: { invoiceId: string; userId: string; totalReceived: string; cancelledAt: string } }
  /**
   * `unpaid`: its amount had not arrived by `expiresAt`; `unconfirmed`: its payments were still
   * unconfirmed at `monitoringExpiresAt`. `totalReceived`: what it had received, all of it to refund.
   */
  | { type: 'InvoiceExpired'; data: { invoiceId: string; reason: 'unpaid' | 'unconfirmed'; totalReceived: string; expiredAt: string } };
