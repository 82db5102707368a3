import type { Logger } from 'pino';
import { invoiceDecider, invoiceStreamName } from '../../domain/invoice/decider.ts';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { ObservedPayment, PaymentProcessor } from '../../infra/payment/port.ts';
import type { InvoicesProjection, InvoiceView } from '../../projections/invoices/invoices-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { startPeriodicRound, type PeriodicRound } from './periodic-round.ts';

/** `check()`: one round now (tests, start-up); `stop()` also closes the processor. */
export type PaymentWatcher = PeriodicRound;

/** Whether the read model knows this payment as the processor reports it now (nothing to tell the invoice). */
const known = (invoice: InvoiceView, payment: ObservedPayment): boolean => {
  const seen = invoice.payments.find((p) => p.paymentId === payment.paymentId);
  if (!seen) return false;
  return seen.confirmations === payment.confirmations || (seen.confirmations >= invoice.requiredConfirmations && payment.confirmations >= invoice.requiredConfirmations);
};

/**
 * Advances invoices from what the payment processor sees (docs/billing.md): every `intervalMs`
 * it reads the payments to the addresses of the watched invoices (open ones, and final ones
 * until their monitoring ends), tells each invoice of every payment the read model does not know
 * as it is now (new, or its confirmations changed), then expires the invoices whose time is up.
 * The processor reports every payment from the beginning each time, under stable ids, and the
 * invoice records each once: a restart reads them all again and misses or counts none twice.
 * While the processor cannot be reached, rounds are logged and tried again; nothing expires on a
 * round that could not read its payments, so an outage never expires an invoice that was paid.
 */
export const startPaymentWatcher = (deps: {
  readonly store: EventStore;
  readonly invoices: InvoicesProjection;
  readonly processor: PaymentProcessor;
  /** Catches the read models up before a round (the invoices made by the API since the last one). */
  readonly catchUp: () => Promise<void>;
  readonly intervalMs: number;
  readonly log: Logger;
}): PaymentWatcher => {
  let unavailableLogged = false;

  const tell = async (invoiceId: string, command: Parameters<typeof invoiceDecider.decide>[0]) => {
    const result = await handleCommand(deps.store, invoiceStreamName(invoiceId), invoiceDecider, command, { actor: 'system:payments', correlationId: invoiceId });
    if (!result.ok) deps.log.warn({ invoiceId, reason: result.error.message }, 'invoice did not take a report of its payment processor');
    else for (const event of result.events) deps.log.info({ invoiceId, event: event.type }, 'invoice advanced');
  };

  const round = async () => {
    await deps.catchUp();
    const now = Date.now();
    const watched = deps.invoices.watched(now).filter((i) => i.asset === deps.processor.asset && i.network === deps.processor.network);
    if (watched.length === 0) return;
    const byIndex = new Map(watched.map((i) => [i.addressIndex, i]));
    let payments: ObservedPayment[];
    try {
      payments = await deps.processor.listPayments([...byIndex.keys()]);
      if (unavailableLogged) deps.log.info('payment processor answers again');
      unavailableLogged = false;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      if (!unavailableLogged) deps.log.warn({ reason: error.message }, 'payment processor unavailable: invoices wait');
      unavailableLogged = true;
      return;
    }
    for (const payment of payments) {
      const invoice = byIndex.get(payment.addressIndex);
      if (!invoice || known(invoice, payment)) continue;
      const { paymentId, txid, amount, confirmations, receivedAt } = payment;
      await tell(invoice.invoiceId, { type: 'RecordPayment', data: { paymentId, txid, amount, confirmations, receivedAt, now: new Date() } });
    }
    await deps.catchUp();
    for (const invoice of watched) {
      const current = deps.invoices.invoice(invoice.invoiceId)!;
      const due = (current.status === 'pending' && Date.parse(current.expiresAt) <= Date.now()) || (current.status === 'confirming' && Date.parse(current.monitoringExpiresAt) <= Date.now());
      if (due) await tell(invoice.invoiceId, { type: 'ExpireInvoice', data: { now: new Date() } });
    }
  };

  const rounds = startPeriodicRound(round, deps.intervalMs, deps.log, 'payment watch failed; trying again next round');
  return {
    check: rounds.check,
    stop: async () => {
      await rounds.stop();
      await deps.processor.close();
    },
  };
};
