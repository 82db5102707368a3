/**
 * The invoice: `pending → confirming → paid`, or `cancelled`, or `expired`. Pure: the payment
 * processor's reports, the owner's requests and the clock come in as commands.
 *
 * States (Greenfield's names in brackets):
 * - `pending` [New]: waiting for its amount. Payments add up; less than the amount keeps it here.
 * - `confirming` [Processing]: the payments counted so far reach the amount (in the pool or in
 *   blocks); they wait for `requiredConfirmations`.
 * - `paid` [Settled]: the counted payments that have `requiredConfirmations` reach the amount. Final:
 *   it unlocks the paid plan, and nothing takes it back.
 * - `cancelled` [Invalid]: by its owner, only while `pending`. Final.
 * - `expired` [Expired]: `pending` at `expiresAt`, or still `confirming` at `monitoringExpiresAt`. Final.
 *
 * Rules:
 * - A payment is recorded once, by the processor's `paymentId` (its transaction and outputs to the
 *   address): the watcher reports every payment every time it reads, and after a restart reads
 *   them all again; a payment known already only updates its confirmations.
 * - Confirmations are recorded when they change below `requiredConfirmations` (more above it tell
 *   nothing new), and when they fall: a reorganisation.
 * - A payment counts when it reaches the processor (`receivedAt`) before `expiresAt` while the
 *   invoice is `pending`, or at any time while it is `confirming`.
 *
 * Odd payments (docs/billing.md, "Invoice states and odd payments"):
 * - Underpayment: the invoice stays `pending` with what it received; more payments can complete it.
 *   At `expiresAt` it expires (`unpaid`) and what it received is for the operator to refund
 *   (Greenfield's PaidPartial).
 * - Several payments to one invoice: each is its own payment; their amounts add up, and the
 *   invoice is paid when the confirmed ones reach the amount.
 * - Overpayment: the invoice is paid; `InvoicePaid.overpaidBy` is the excess, to refund once its
 *   transaction is confirmed (PaidOver). A payment arriving while the invoice is `confirming`
 *   counts, and so adds to the excess.
 * - A payment after the invoice is paid, cancelled or expired (or one that reached the processor
 *   after `expiresAt` while the invoice was still `pending`, which expires it first): recorded as
 *   `InvoicePaymentReceivedLate`; it counts for nothing and all of it is to refund (PaidLate). Its
 *   confirmations are still followed, so the operator knows when the money is there.
 * - A reorganisation that takes confirmations away: recorded (`InvoicePaymentUpdated` with fewer
 *   confirmations). The state does not move back: `confirming` depends on amounts, not
 *   confirmations, and a payment back in the pool still counts; a `confirming` invoice is paid
 *   only when enough confirmations are there again. A `paid` invoice stays paid:
 *   `requiredConfirmations` is the depth a reorganisation is not expected to reach.
 * - A payment that never confirms (double-spent, dropped from the pool) keeps its invoice
 *   `confirming` until `monitoringExpiresAt`, when it expires (`unconfirmed`).
 * - Cancel: only a `pending` invoice (with a part of its amount received or not: that part is to
 *   refund). A `confirming` invoice cannot be cancelled (its money is on its way), nor a `paid` or
 *   `expired` one; cancelling a cancelled invoice again does nothing.
 */
import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { InvoiceCommand } from './commands.ts';
import { INVOICE_PERIODS, type InvoiceAdditionalStatus, type InvoiceEvent, type InvoiceStatus } from './events.ts';

export interface InvoicePayment {
  readonly paymentId: string;
  readonly txid: string;
  readonly amount: bigint;
  readonly confirmations: number;
  /** Received after the invoice was final: not counted, all of it to refund. */
  readonly late: boolean;
}

export type InvoiceState =
  | { readonly status: 'none' }
  | {
      readonly status: InvoiceStatus;
      readonly invoiceId: string;
      readonly userId: string;
      readonly amount: bigint;
      readonly requiredConfirmations: number;
      readonly expiresAt: number;
      readonly monitoringExpiresAt: number;
      readonly payments: ReadonlyMap<string, InvoicePayment>;
      /** Counted payments, confirmed or not. */
      readonly totalReceived: bigint;
      /** Late payments. */
      readonly lateReceived: bigint;
      /** Set when paid. */
      readonly overpaidBy: bigint;
    };

type Invoice = Exclude<InvoiceState, { status: 'none' }>;

export const invoiceStreamName = (invoiceId: string) => `invoice-${invoiceId}`;

export const INVOICE_ERRORS = {
  notFound: 'Invoice not found',
  exists: 'Invoice already exists',
  cancelConfirming: 'Invoice payment is being confirmed and cannot be cancelled',
  cancelPaid: 'Invoice is paid and cannot be cancelled',
  cancelExpired: 'Invoice has expired and cannot be cancelled',
} as const;

const initialState = (): InvoiceState => ({ status: 'none' });

const PRICE = /^\d{1,12}(\.\d{1,8})?$/;

const creationProblem = (data: Extract<InvoiceCommand, { type: 'CreateInvoice' }>['data']): string | undefined => {
  if (!data.invoiceId || !data.userId || !data.planId) return 'An invoice needs an id, a user and a plan';
  if (!(INVOICE_PERIODS as readonly string[]).includes(data.period)) return `Invalid period: expected ${INVOICE_PERIODS.join(' or ')}`;
  if (!data.asset || !data.network || !data.currency) return 'An invoice needs an asset, a network and a currency';
  if (data.amount <= 0n) return 'The amount must be more than zero';
  if (!PRICE.test(data.price)) return 'The price must be a decimal number';
  if (!data.address || !Number.isSafeInteger(data.addressIndex) || data.addressIndex < 0) return 'An invoice needs an address and its index';
  if (!Number.isSafeInteger(data.requiredConfirmations) || data.requiredConfirmations < 0) return 'Required confirmations must be a whole number, 0 or more';
  if (data.expiresAt.getTime() <= data.now.getTime()) return 'The invoice must expire after it is created';
  if (data.monitoringExpiresAt.getTime() < data.expiresAt.getTime()) return 'Monitoring must not end before the invoice expires';
  return undefined;
};

/** Confirmations as far as they matter: more than required tell nothing new. */
const effective = (invoice: Invoice, confirmations: number) => Math.min(confirmations, invoice.requiredConfirmations);

const confirmedTotal = (invoice: Invoice): bigint => {
  let total = 0n;
  for (const payment of invoice.payments.values())
    if (!payment.late && payment.confirmations >= invoice.requiredConfirmations) total += payment.amount;
  return total;
};

/** After the events of one decision: the move to `confirming` and `paid` they cause, if any. */
const progress = (invoice: Invoice, now: Date): InvoiceEvent[] => {
  const events: InvoiceEvent[] = [];
  let state = invoice;
  if (state.status === 'pending' && state.totalReceived >= state.amount) {
    const confirming: InvoiceEvent = { type: 'InvoiceConfirming', data: { invoiceId: state.invoiceId, totalReceived: String(state.totalReceived), confirmingAt: now.toISOString() } };
    events.push(confirming);
    state = evolveInvoice(state, confirming);
  }
  if (state.status === 'confirming' && confirmedTotal(state) >= state.amount) {
    events.push({
      type: 'InvoicePaid',
      data: { invoiceId: state.invoiceId, amountPaid: String(state.totalReceived), overpaidBy: String(state.totalReceived - state.amount), paidAt: now.toISOString() },
    });
  }
  return events;
};

const recordPayment = (invoice: Invoice, data: Extract<InvoiceCommand, { type: 'RecordPayment' }>['data']): Decision<InvoiceEvent> => {
  const { paymentId, txid, amount, confirmations, receivedAt, now } = data;
  if (!paymentId || !txid) return domainError('validation', 'A payment needs its id and transaction id');
  if (amount <= 0n) return domainError('validation', 'A payment amount must be more than zero');
  if (!Number.isSafeInteger(confirmations) || confirmations < 0) return domainError('validation', 'Confirmations must be a whole number, 0 or more');
  const known = invoice.payments.get(paymentId);
  const events: InvoiceEvent[] = [];
  if (known) {
    if (effective(invoice, confirmations) === effective(invoice, known.confirmations)) return [];
    events.push({
      type: 'InvoicePaymentUpdated',
      data: { invoiceId: invoice.invoiceId, paymentId, txid: known.txid, confirmations, previousConfirmations: known.confirmations, updatedAt: now.toISOString() },
    });
  } else {
    const payment = { invoiceId: invoice.invoiceId, paymentId, txid, amount: String(amount), confirmations, receivedAt: receivedAt.toISOString(), seenAt: now.toISOString() };
    // Too late for a pending invoice: it expired before this payment came.
    if (invoice.status === 'pending' && receivedAt.getTime() >= invoice.expiresAt)
      events.push({ type: 'InvoiceExpired', data: { invoiceId: invoice.invoiceId, reason: 'unpaid', totalReceived: String(invoice.totalReceived), expiredAt: now.toISOString() } });
    const status = events.length > 0 ? 'expired' : invoice.status;
    if (status === 'pending' || status === 'confirming')
      events.push({ type: 'InvoicePaymentSeen', data: { ...payment, totalReceived: String(invoice.totalReceived + amount) } });
    else events.push({ type: 'InvoicePaymentReceivedLate', data: { ...payment, invoiceStatus: status } });
  }
  return [...events, ...progress(events.reduce(evolveInvoice, invoice), now)];
};

const cancel = (invoice: Invoice, userId: string, now: Date): Decision<InvoiceEvent> => {
  if (invoice.userId !== userId) return domainError('not_found', INVOICE_ERRORS.notFound);
  switch (invoice.status) {
    case 'pending':
      return [{ type: 'InvoiceCancelled', data: { invoiceId: invoice.invoiceId, userId, totalReceived: String(invoice.totalReceived), cancelledAt: now.toISOString() } }];
    case 'cancelled':
      return [];
    case 'confirming':
      return domainError('illegal_state', INVOICE_ERRORS.cancelConfirming);
    case 'paid':
      return domainError('illegal_state', INVOICE_ERRORS.cancelPaid);
    case 'expired':
      return domainError('illegal_state', INVOICE_ERRORS.cancelExpired);
    default:
      return assertNever(invoice.status);
  }
};

const expire = (invoice: Invoice, now: Date): Decision<InvoiceEvent> => {
  const at = now.getTime();
  const reason = invoice.status === 'pending' && at >= invoice.expiresAt ? 'unpaid' : invoice.status === 'confirming' && at >= invoice.monitoringExpiresAt ? 'unconfirmed' : undefined;
  if (reason === undefined) return [];
  return [{ type: 'InvoiceExpired', data: { invoiceId: invoice.invoiceId, reason, totalReceived: String(invoice.totalReceived), expiredAt: now.toISOString() } }];
};

export const decide = (command: InvoiceCommand, state: InvoiceState): Decision<InvoiceEvent> => {
  if (command.type === 'CreateInvoice') {
    if (state.status !== 'none') return domainError('conflict', INVOICE_ERRORS.exists);
    const problem = creationProblem(command.data);
    if (problem) return domainError('validation', problem);
    const { amount, expiresAt, monitoringExpiresAt, now, ...rest } = command.data;
    return [
      {
        type: 'InvoiceCreated',
        data: { ...rest, amount: String(amount), expiresAt: expiresAt.toISOString(), monitoringExpiresAt: monitoringExpiresAt.toISOString(), createdAt: now.toISOString() },
      },
    ];
  }
  if (state.status === 'none') return domainError('not_found', INVOICE_ERRORS.notFound);
  switch (command.type) {
    case 'RecordPayment':
      return recordPayment(state, command.data);
    case 'CancelInvoice':
      return cancel(state, command.data.userId, command.data.now);
    case 'ExpireInvoice':
      return expire(state, command.data.now);
    default:
      return assertNever(command);
  }
};

const evolveInvoice = (invoice: Invoice, event: InvoiceEvent): Invoice => {
  switch (event.type) {
    case 'InvoiceCreated':
      return invoice;
    case 'InvoicePaymentSeen':
    case 'InvoicePaymentReceivedLate': {
      const late = event.type === 'InvoicePaymentReceivedLate';
      const { paymentId, txid, confirmations } = event.data;
      const amount = BigInt(event.data.amount);
      const payments = new Map(invoice.payments).set(paymentId, { paymentId, txid, amount, confirmations, late });
      return late
        ? { ...invoice, payments, lateReceived: invoice.lateReceived + amount }
        : { ...invoice, payments, totalReceived: invoice.totalReceived + amount };
    }
    case 'InvoicePaymentUpdated': {
      const known = invoice.payments.get(event.data.paymentId);
      if (!known) return invoice;
      return { ...invoice, payments: new Map(invoice.payments).set(known.paymentId, { ...known, confirmations: event.data.confirmations }) };
    }
    case 'InvoiceConfirming':
      return { ...invoice, status: 'confirming' };
    case 'InvoicePaid':
      return { ...invoice, status: 'paid', overpaidBy: BigInt(event.data.overpaidBy) };
    case 'InvoiceCancelled':
      return { ...invoice, status: 'cancelled' };
    case 'InvoiceExpired':
      return { ...invoice, status: 'expired' };
    default:
      return assertNever(event);
  }
};

export const evolve = (state: InvoiceState, event: InvoiceEvent): InvoiceState => {
  if (event.type === 'InvoiceCreated') {
    const { invoiceId, userId, amount, requiredConfirmations, expiresAt, monitoringExpiresAt } = event.data;
    return {
      status: 'pending',
      invoiceId,
      userId,
      amount: BigInt(amount),
      requiredConfirmations,
      expiresAt: Date.parse(expiresAt),
      monitoringExpiresAt: Date.parse(monitoringExpiresAt),
      payments: new Map(),
      totalReceived: 0n,
      lateReceived: 0n,
      overpaidBy: 0n,
    };
  }
  return state.status === 'none' ? state : evolveInvoice(state, event);
};

/** What is still to pay (0 once the counted payments reach the amount). */
export const amountDueOf = (invoice: Invoice): bigint => (invoice.totalReceived >= invoice.amount ? 0n : invoice.amount - invoice.totalReceived);

/** What the operator owes back: late payments, the excess of a paid invoice, all of a cancelled or expired one. */
export const refundDueOf = (invoice: Invoice): bigint => {
  switch (invoice.status) {
    case 'paid':
      return invoice.overpaidBy + invoice.lateReceived;
    case 'cancelled':
    case 'expired':
      return invoice.totalReceived + invoice.lateReceived;
    case 'pending':
    case 'confirming':
      return invoice.lateReceived;
    default:
      return assertNever(invoice.status);
  }
};

/** Greenfield's `additionalStatus` of the invoice: a late payment first, then more or less than the amount. */
export const additionalStatusOf = (invoice: Invoice): InvoiceAdditionalStatus => {
  if (invoice.lateReceived > 0n) return 'PaidLate';
  if (invoice.totalReceived > invoice.amount) return 'PaidOver';
  return invoice.totalReceived > 0n && invoice.totalReceived < invoice.amount ? 'PaidPartial' : 'None';
};

export const invoiceDecider: Decider<InvoiceState, InvoiceCommand, InvoiceEvent> = { decide, evolve, initialState };
