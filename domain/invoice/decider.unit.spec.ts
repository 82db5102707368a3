import { describe, expect, it } from 'vitest';
import { fold } from '../shared/decider.ts';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { InvoiceCommand } from './commands.ts';
import { additionalStatusOf, amountDueOf, INVOICE_ERRORS, invoiceDecider, invoiceStreamName, refundDueOf, type InvoiceState } from './decider.ts';
import type { InvoiceEvent, InvoiceFinalStatus } from './events.ts';

const spec = deciderSpec(invoiceDecider);
const t0 = new Date('2026-03-01T10:00:00.000Z');
const minutes = (n: number) => new Date(t0.getTime() + n * 60_000);
const iso = (n: number) => minutes(n).toISOString();
// Expires after 60 minutes; payments still confirming are followed for a day.
const EXPIRES = 60;
const MONITORING = 24 * 60;
const AMOUNT = 1_500_000_000_000n; // 1.5 XMR in piconero
const REQUIRED = 10;

const createCommand = (overrides: Partial<Extract<InvoiceCommand, { type: 'CreateInvoice' }>['data']> = {}): InvoiceCommand => ({
  type: 'CreateInvoice',
  data: {
    invoiceId: 'inv_1',
    userId: 'user_1',
    planId: 'paid',
    period: 'monthly',
    asset: 'XMR',
    network: 'regtest',
    amount: AMOUNT,
    price: '5.00',
    currency: 'USD',
    address: '8Bsubaddress',
    addressIndex: 7,
    paymentUri: 'monero:8Bsubaddress?tx_amount=1.5',
    requiredConfirmations: REQUIRED,
    expiresAt: minutes(EXPIRES),
    monitoringExpiresAt: minutes(MONITORING),
    now: t0,
    ...overrides,
  },
});

const created = (amount = AMOUNT, requiredConfirmations = REQUIRED): InvoiceEvent => ({
  type: 'InvoiceCreated',
  data: {
    invoiceId: 'inv_1',
    userId: 'user_1',
    planId: 'paid',
    period: 'monthly',
    asset: 'XMR',
    network: 'regtest',
    amount: String(amount),
    price: '5.00',
    currency: 'USD',
    address: '8Bsubaddress',
    addressIndex: 7,
    paymentUri: 'monero:8Bsubaddress?tx_amount=1.5',
    requiredConfirmations,
    expiresAt: iso(EXPIRES),
    monitoringExpiresAt: iso(MONITORING),
    createdAt: iso(0),
  },
});

/** The processor reports payment `n` (txid `tx<n>`), received at minute `receivedAt`, read at minute `at`. */
const report = (n: number, amount: bigint, confirmations: number, at = 5, receivedAt = at): InvoiceCommand => ({
  type: 'RecordPayment',
  data: { paymentId: `tx${n}:0/7`, txid: `tx${n}`, amount, confirmations, receivedAt: minutes(receivedAt), now: minutes(at) },
});
const payment = (n: number, amount: bigint, confirmations: number, at = 5, receivedAt = at) => ({
  invoiceId: 'inv_1',
  paymentId: `tx${n}:0/7`,
  txid: `tx${n}`,
  amount: String(amount),
  confirmations,
  receivedAt: iso(receivedAt),
  seenAt: iso(at),
});
const seen = (n: number, amount: bigint, confirmations: number, totalReceived: bigint, at = 5, receivedAt = at): InvoiceEvent => ({
  type: 'InvoicePaymentSeen',
  data: { ...payment(n, amount, confirmations, at, receivedAt), totalReceived: String(totalReceived) },
});
const late = (n: number, amount: bigint, confirmations: number, invoiceStatus: InvoiceFinalStatus, at = 5, receivedAt = at): InvoiceEvent => ({
  type: 'InvoicePaymentReceivedLate',
  data: { ...payment(n, amount, confirmations, at, receivedAt), invoiceStatus },
});
const updated = (n: number, confirmations: number, previousConfirmations: number, at = 5): InvoiceEvent => ({
  type: 'InvoicePaymentUpdated',
  data: { invoiceId: 'inv_1', paymentId: `tx${n}:0/7`, txid: `tx${n}`, confirmations, previousConfirmations, updatedAt: iso(at) },
});
const confirming = (totalReceived: bigint, at = 5): InvoiceEvent => ({ type: 'InvoiceConfirming', data: { invoiceId: 'inv_1', totalReceived: String(totalReceived), confirmingAt: iso(at) } });
const paid = (amountPaid: bigint, at = 5): InvoiceEvent => ({
  type: 'InvoicePaid',
  data: { invoiceId: 'inv_1', amountPaid: String(amountPaid), overpaidBy: String(amountPaid - AMOUNT), paidAt: iso(at) },
});
const cancelled = (totalReceived = 0n, at = 5): InvoiceEvent => ({ type: 'InvoiceCancelled', data: { invoiceId: 'inv_1', userId: 'user_1', totalReceived: String(totalReceived), cancelledAt: iso(at) } });
const expired = (reason: 'unpaid' | 'unconfirmed', totalReceived = 0n, at = EXPIRES): InvoiceEvent => ({
  type: 'InvoiceExpired',
  data: { invoiceId: 'inv_1', reason, totalReceived: String(totalReceived), expiredAt: iso(at) },
});
const cancel = (userId = 'user_1', at = 5): InvoiceCommand => ({ type: 'CancelInvoice', data: { userId, now: minutes(at) } });
const expire = (at: number): InvoiceCommand => ({ type: 'ExpireInvoice', data: { now: minutes(at) } });

/** The invoice after `events` (it exists). */
const invoiceAfter = (events: InvoiceEvent[]) => {
  const state = fold(invoiceDecider, events);
  if (state.status === 'none') throw new Error('no invoice');
  return state as Exclude<InvoiceState, { status: 'none' }>;
};

// A paid invoice: one exact payment, seen in the pool, then confirmed.
const paidHistory = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT), updated(1, REQUIRED, 0, 30), paid(AMOUNT, 30)];

describe('invoice decider: creation', () => {
  it('names its stream after the invoice', () => expect(invoiceStreamName('inv_1')).toBe('invoice-inv_1'));

  it('creates a pending invoice, the amount as a decimal string of atomic units', () => {
    spec.given([]).when(createCommand()).then([created()]);
    expect(fold(invoiceDecider, [created()])).toMatchObject({ status: 'pending', amount: AMOUNT, totalReceived: 0n });
  });

  it('keeps amounts past 2^53 exact', () => {
    const big = 12_345_678_901_234_567_891n;
    spec.given([]).when(createCommand({ amount: big })).then([created(big)]);
    expect(invoiceAfter([created(big)]).amount).toBe(big);
  });

  it('refuses a second creation of the same invoice', () => spec.given([created()]).when(createCommand()).thenFails('conflict', INVOICE_ERRORS.exists));

  it('refuses what cannot be an invoice', () => {
    const bad: Array<Partial<Extract<InvoiceCommand, { type: 'CreateInvoice' }>['data']>> = [
      { amount: 0n },
      { amount: -1n },
      { price: 'five' },
      { price: '-5' },
      { period: 'weekly' as never },
      { expiresAt: t0 },
      { monitoringExpiresAt: minutes(EXPIRES - 1) },
      { requiredConfirmations: -1 },
      { requiredConfirmations: 1.5 },
      { addressIndex: -1 },
      { address: '' },
      { asset: '' },
      { userId: '' },
    ];
    for (const overrides of bad) spec.given([]).when(createCommand(overrides)).thenFails('validation');
  });

  it('answers not found for every other command on an invoice that does not exist', () => {
    spec.given([]).when(report(1, AMOUNT, 0)).thenFails('not_found', INVOICE_ERRORS.notFound);
    spec.given([]).when(cancel()).thenFails('not_found', INVOICE_ERRORS.notFound);
    spec.given([]).when(expire(EXPIRES)).thenFails('not_found', INVOICE_ERRORS.notFound);
  });
});

describe('invoice decider: pending → confirming → paid', () => {
  it('moves to confirming when the whole amount is seen in the pool', () =>
    spec.given([created()]).when(report(1, AMOUNT, 0)).then([seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)]));

  it('records confirmations as they rise, and pays the invoice at the required number', () => {
    const history = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)];
    spec.given(history).when(report(1, AMOUNT, 1, 8)).then([updated(1, 1, 0, 8)]);
    spec.given([...history, updated(1, 1, 0, 8)]).when(report(1, AMOUNT, 9, 20)).then([updated(1, 9, 1, 20)]);
    spec.given([...history, updated(1, 9, 1, 20)]).when(report(1, AMOUNT, REQUIRED, 30)).then([updated(1, REQUIRED, 9, 30), paid(AMOUNT, 30)]);
    expect(invoiceAfter(paidHistory)).toMatchObject({ status: 'paid', overpaidBy: 0n });
  });

  it('pays at once a payment first seen with its confirmations (read after a restart)', () =>
    spec.given([created()]).when(report(1, AMOUNT, 12)).then([seen(1, AMOUNT, 12, AMOUNT), confirming(AMOUNT), paid(AMOUNT)]));

  it('with no confirmations required, pays as soon as the amount is in the pool', () =>
    spec.given([created(AMOUNT, 0)]).when(report(1, AMOUNT, 0)).then([seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT), paid(AMOUNT)]));

  it('records nothing for a payment it knows with the same confirmations (the watcher reads every payment every time)', () => {
    spec.given([created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)]).when(report(1, AMOUNT, 0, 9)).thenNothingHappens();
    spec.given(paidHistory).when(report(1, AMOUNT, REQUIRED, 40)).thenNothingHappens();
  });

  it('records nothing for confirmations beyond the required number', () => spec.given(paidHistory).when(report(1, AMOUNT, 25, 40)).thenNothingHappens());

  it('keeps the amount a payment was first seen with', () => {
    spec.given([created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)]).when(report(1, 1n, 0, 9)).thenNothingHappens();
    expect(invoiceAfter([created(), seen(1, AMOUNT, 0, AMOUNT), updated(1, 3, 0)]).payments.get('tx1:0/7')?.amount).toBe(AMOUNT);
  });

  it('refuses a report that cannot be a payment', () => {
    spec.given([created()]).when(report(1, 0n, 0)).thenFails('validation');
    spec.given([created()]).when(report(1, AMOUNT, -1)).thenFails('validation');
    spec.given([created()]).when({ type: 'RecordPayment', data: { paymentId: '', txid: 'tx', amount: AMOUNT, confirmations: 0, receivedAt: t0, now: t0 } }).thenFails('validation');
  });
});

describe('invoice decider: odd payments', () => {
  const third = AMOUNT / 3n;

  it('underpayment: stays pending with what it received, and says what is due', () => {
    spec.given([created()]).when(report(1, third, 0)).then([seen(1, third, 0, third)]);
    const invoice = invoiceAfter([created(), seen(1, third, 0, third)]);
    expect(invoice.status).toBe('pending');
    expect(amountDueOf(invoice)).toBe(AMOUNT - third);
    expect(additionalStatusOf(invoice)).toBe('PaidPartial');
  });

  it('underpayment even when confirmed: confirmations alone never pay', () =>
    spec.given([created(), seen(1, third, 0, third)]).when(report(1, third, REQUIRED, 30)).then([updated(1, REQUIRED, 0, 30)]));

  it('underpayment left so: expires at expiresAt, what it received to refund', () => {
    const history = [created(), seen(1, third, REQUIRED, third)];
    spec.given(history).when(expire(EXPIRES)).then([expired('unpaid', third)]);
    const invoice = invoiceAfter([...history, expired('unpaid', third)]);
    expect(refundDueOf(invoice)).toBe(third);
    expect(additionalStatusOf(invoice)).toBe('PaidPartial');
  });

  it('several payments: they add up, and the invoice confirms when they reach the amount', () => {
    const rest = AMOUNT - third;
    spec.given([created(), seen(1, third, 0, third)]).when(report(2, rest, 0, 7)).then([seen(2, rest, 0, AMOUNT, 7), confirming(AMOUNT, 7)]);
  });

  it('several payments: paid only when the confirmed ones reach the amount', () => {
    const rest = AMOUNT - third;
    const history = [created(), seen(1, third, 0, third), seen(2, rest, 0, AMOUNT, 7), confirming(AMOUNT, 7)];
    spec.given(history).when(report(2, rest, REQUIRED, 30)).then([updated(2, REQUIRED, 0, 30)]);
    spec.given([...history, updated(2, REQUIRED, 0, 30)]).when(report(1, third, REQUIRED, 31)).then([updated(1, REQUIRED, 0, 31), paid(AMOUNT, 31)]);
  });

  it('two payments in one decision: the same transaction paying twice is one payment, two transactions are two', () => {
    const half = AMOUNT / 2n;
    const history = [created(), seen(1, half, 0, half)];
    spec.given(history).when(report(1, half, 0, 6)).thenNothingHappens();
    spec.given(history).when(report(2, half, 0, 6)).then([seen(2, half, 0, AMOUNT, 6), confirming(AMOUNT, 6)]);
  });

  it('overpayment: paid, with the excess noted for a refund', () => {
    const more = AMOUNT + 250_000_000_000n;
    spec.given([created()]).when(report(1, more, REQUIRED)).then([seen(1, more, REQUIRED, more), confirming(more), paid(more)]);
    const invoice = invoiceAfter([created(), seen(1, more, REQUIRED, more), confirming(more), paid(more)]);
    expect(invoice.overpaidBy).toBe(250_000_000_000n);
    expect(refundDueOf(invoice)).toBe(250_000_000_000n);
    expect(additionalStatusOf(invoice)).toBe('PaidOver');
  });

  it('overpayment by a second payment while confirming: it counts, and the excess is part of the settlement', () => {
    const history = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)];
    spec.given(history).when(report(2, third, 0, 9)).then([seen(2, third, 0, AMOUNT + third, 9)]);
    // The first payment's confirmations settle the invoice; the second is in the excess, confirmed or not.
    spec
      .given([...history, seen(2, third, 0, AMOUNT + third, 9)])
      .when(report(1, AMOUNT, REQUIRED, 30))
      .then([updated(1, REQUIRED, 0, 30), paid(AMOUNT + third, 30)]);
  });

  it('a payment after the invoice is paid: received late, all of it to refund', () => {
    spec.given(paidHistory).when(report(2, third, 0, 40)).then([late(2, third, 0, 'paid', 40)]);
    const invoice = invoiceAfter([...paidHistory, late(2, third, 0, 'paid', 40)]);
    expect(invoice.status).toBe('paid');
    expect(refundDueOf(invoice)).toBe(third);
    expect(additionalStatusOf(invoice)).toBe('PaidLate');
  });

  it('a payment after cancel: received late, the invoice stays cancelled', () => {
    spec.given([created(), cancelled()]).when(report(1, AMOUNT, 0, 9)).then([late(1, AMOUNT, 0, 'cancelled', 9)]);
    expect(invoiceAfter([created(), cancelled(), late(1, AMOUNT, 0, 'cancelled', 9)]).status).toBe('cancelled');
  });

  it('a payment after expiry: received late, the invoice stays expired', () => {
    spec.given([created(), expired('unpaid')]).when(report(1, AMOUNT, 0, 70)).then([late(1, AMOUNT, 0, 'expired', 70)]);
    expect(refundDueOf(invoiceAfter([created(), expired('unpaid'), late(1, AMOUNT, 0, 'expired', 70)]))).toBe(AMOUNT);
  });

  it('a payment that reached the processor after expiresAt, the invoice not yet expired: it expires first, the payment is late', () =>
    spec.given([created(), seen(1, third, 0, third)]).when(report(2, AMOUNT, 0, 70, EXPIRES)).then([expired('unpaid', third, 70), late(2, AMOUNT, 0, 'expired', 70, EXPIRES)]));

  it('a payment that reached the processor in time but was read after expiresAt counts', () =>
    spec.given([created()]).when(report(1, AMOUNT, 3, 75, EXPIRES - 1)).then([seen(1, AMOUNT, 3, AMOUNT, 75, EXPIRES - 1), confirming(AMOUNT, 75)]));

  it("a late payment's confirmations are followed, and never pay the invoice", () => {
    const history = [created(), cancelled(), late(1, AMOUNT, 0, 'cancelled', 9)];
    spec.given(history).when(report(1, AMOUNT, REQUIRED, 30)).then([updated(1, REQUIRED, 0, 30)]);
    expect(invoiceAfter([...history, updated(1, REQUIRED, 0, 30)]).status).toBe('cancelled');
  });

  it('a reorganisation that takes confirmations away is recorded; a confirming invoice stays confirming', () => {
    const history = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT), updated(1, 6, 0, 20)];
    spec.given(history).when(report(1, AMOUNT, 4, 21)).then([updated(1, 4, 6, 21)]);
    // Back in the pool: still counted, still confirming.
    spec.given(history).when(report(1, AMOUNT, 0, 21)).then([updated(1, 0, 6, 21)]);
    expect(invoiceAfter([...history, updated(1, 0, 6, 21)]).status).toBe('confirming');
  });

  it('after a reorganisation the invoice is paid only when the confirmations are back', () => {
    const rest = AMOUNT / 2n;
    const history = [created(), seen(1, rest, 0, rest), seen(2, rest, 0, AMOUNT), confirming(AMOUNT), updated(1, REQUIRED, 0, 20), updated(1, 7, REQUIRED, 21)];
    spec.given(history).when(report(2, rest, REQUIRED, 22)).then([updated(2, REQUIRED, 0, 22)]);
    spec.given([...history, updated(2, REQUIRED, 0, 22)]).when(report(1, rest, REQUIRED, 25)).then([updated(1, REQUIRED, 7, 25), paid(AMOUNT, 25)]);
  });

  it('a reorganisation under a paid invoice is recorded; the invoice stays paid', () => {
    spec.given(paidHistory).when(report(1, AMOUNT, 3, 40)).then([updated(1, 3, REQUIRED, 40)]);
    const after = [...paidHistory, updated(1, 3, REQUIRED, 40)];
    expect(invoiceAfter(after).status).toBe('paid');
    spec.given(after).when(report(1, AMOUNT, REQUIRED, 50)).then([updated(1, REQUIRED, 3, 50)]);
  });

  it('a reorganisation deeper than the required confirmations but not under them records nothing', () => {
    const history = [...paidHistory, updated(1, 25, REQUIRED, 35)];
    spec.given(history).when(report(1, AMOUNT, 12, 40)).thenNothingHappens();
  });
});

describe('invoice decider: cancel', () => {
  it('cancels a pending invoice', () => spec.given([created()]).when(cancel()).then([cancelled()]));

  it('cancels a part-paid pending invoice, what it received to refund', () => {
    const part = AMOUNT / 4n;
    spec.given([created(), seen(1, part, 2, part)]).when(cancel('user_1', 9)).then([cancelled(part, 9)]);
    expect(refundDueOf(invoiceAfter([created(), seen(1, part, 2, part), cancelled(part, 9)]))).toBe(part);
  });

  it('refuses to cancel a confirming, a paid or an expired invoice', () => {
    spec.given([created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)]).when(cancel()).thenFails('illegal_state', INVOICE_ERRORS.cancelConfirming);
    spec.given(paidHistory).when(cancel()).thenFails('illegal_state', INVOICE_ERRORS.cancelPaid);
    spec.given([created(), expired('unpaid')]).when(cancel('user_1', 70)).thenFails('illegal_state', INVOICE_ERRORS.cancelExpired);
  });

  it('does nothing when cancelled again', () => spec.given([created(), cancelled()]).when(cancel()).thenNothingHappens());

  it("answers not found to another user's cancel", () => spec.given([created()]).when(cancel('user_2')).thenFails('not_found', INVOICE_ERRORS.notFound));
});

describe('invoice decider: expiry', () => {
  it('expires a pending invoice at expiresAt, not before', () => {
    spec.given([created()]).when(expire(EXPIRES - 1)).thenNothingHappens();
    spec.given([created()]).when(expire(EXPIRES)).then([expired('unpaid')]);
    expect(additionalStatusOf(invoiceAfter([created(), expired('unpaid')]))).toBe('None');
  });

  it('lets a confirming invoice confirm after expiresAt, until monitoringExpiresAt', () => {
    const history = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)];
    spec.given(history).when(expire(EXPIRES)).thenNothingHappens();
    spec.given(history).when(expire(MONITORING - 1)).thenNothingHappens();
    spec.given(history).when(report(1, AMOUNT, REQUIRED, MONITORING - 1)).then([updated(1, REQUIRED, 0, MONITORING - 1), paid(AMOUNT, MONITORING - 1)]);
  });

  it('expires a confirming invoice whose payments never confirmed, at monitoringExpiresAt', () => {
    const history = [created(), seen(1, AMOUNT, 0, AMOUNT), confirming(AMOUNT)];
    spec.given(history).when(expire(MONITORING)).then([expired('unconfirmed', AMOUNT, MONITORING)]);
    expect(refundDueOf(invoiceAfter([...history, expired('unconfirmed', AMOUNT, MONITORING)]))).toBe(AMOUNT);
  });

  it('does nothing to a paid, cancelled or expired invoice', () => {
    spec.given(paidHistory).when(expire(MONITORING + 1)).thenNothingHappens();
    spec.given([created(), cancelled()]).when(expire(MONITORING + 1)).thenNothingHappens();
    spec.given([created(), expired('unpaid')]).when(expire(MONITORING + 1)).thenNothingHappens();
  });
});
