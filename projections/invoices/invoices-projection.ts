import type { InvoiceAdditionalStatus, InvoiceCreatedData, InvoiceEvent, InvoiceStatus } from '../../domain/invoice/events.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';

export interface InvoicePaymentView {
  paymentId: string;
  txid: string;
  /** Atomic units. */
  amount: string;
  confirmations: number;
  /** Arrived after the invoice was final: counts for nothing, to refund. */
  late: boolean;
  receivedAt: string;
}

/** An invoice as its owner sees it (docs/billing.md); amounts are decimal strings of atomic units. */
export interface InvoiceView extends InvoiceCreatedData {
  status: InvoiceStatus;
  totalReceived: string;
  lateReceived: string;
  overpaidBy: string;
  payments: InvoicePaymentView[];
  paidAt: string | null;
  cancelledAt: string | null;
  expiredAt: string | null;
  /** When the status last changed. */
  updatedAt: string;
}

/** Greenfield's `additionalStatus` of an invoice: what is odd about the money it received. */
export const additionalStatusOf = (invoice: InvoiceView): InvoiceAdditionalStatus => {
  if (BigInt(invoice.lateReceived) > 0n) return 'PaidLate';
  if (BigInt(invoice.overpaidBy) > 0n) return 'PaidOver';
  const received = BigInt(invoice.totalReceived);
  if (received > 0n && received < BigInt(invoice.amount) && invoice.status !== 'confirming') return 'PaidPartial';
  return 'None';
};

/** Every invoice, by id and by owner; the payment watcher reads which ones to watch. */
export class InvoicesProjection implements Projection {
  readonly name = 'invoices';
  readonly categories = ['invoice'] as const;
  private readonly byId = new Map<string, InvoiceView>();

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as InvoiceEvent;
    if (event.type === 'InvoiceCreated') {
      this.byId.set(event.data.invoiceId, {
        ...event.data,
        status: 'pending',
        totalReceived: '0',
        lateReceived: '0',
        overpaidBy: '0',
        payments: [],
        paidAt: null,
        cancelledAt: null,
        expiredAt: null,
        updatedAt: event.data.createdAt,
      });
      return;
    }
    const invoice = this.byId.get(event.data.invoiceId);
    if (!invoice) return;
    switch (event.type) {
      case 'InvoicePaymentSeen': {
        const { paymentId, txid, amount, confirmations, receivedAt, totalReceived } = event.data;
        invoice.payments.push({ paymentId, txid, amount, confirmations, late: false, receivedAt });
        invoice.totalReceived = totalReceived;
        return;
      }
      case 'InvoicePaymentReceivedLate': {
        const { paymentId, txid, amount, confirmations, receivedAt } = event.data;
        invoice.payments.push({ paymentId, txid, amount, confirmations, late: true, receivedAt });
        invoice.lateReceived = (BigInt(invoice.lateReceived) + BigInt(amount)).toString();
        return;
      }
      case 'InvoicePaymentUpdated': {
        const payment = invoice.payments.find((p) => p.paymentId === event.data.paymentId);
        if (payment) payment.confirmations = event.data.confirmations;
        return;
      }
      case 'InvoiceConfirming':
        invoice.status = 'confirming';
        invoice.updatedAt = event.data.confirmingAt;
        return;
      case 'InvoicePaid':
        invoice.status = 'paid';
        invoice.overpaidBy = event.data.overpaidBy;
        invoice.paidAt = invoice.updatedAt = event.data.paidAt;
        return;
      case 'InvoiceCancelled':
        invoice.status = 'cancelled';
        invoice.cancelledAt = invoice.updatedAt = event.data.cancelledAt;
        return;
      case 'InvoiceExpired':
        invoice.status = 'expired';
        invoice.expiredAt = invoice.updatedAt = event.data.expiredAt;
        return;
      default:
        return;
    }
  }

  /** Whether an invoice has this address of a processor's wallet already. */
  hasAddress(asset: string, network: string, addressIndex: number): boolean {
    for (const invoice of this.byId.values()) if (invoice.asset === asset && invoice.network === network && invoice.addressIndex === addressIndex) return true;
    return false;
  }

  invoice(invoiceId: string): InvoiceView | undefined {
    return this.byId.get(invoiceId);
  }

  /** A user's invoices, newest first. */
  invoicesOf(userId: string): InvoiceView[] {
    return [...this.byId.values()].filter((i) => i.userId === userId).sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  }

  /**
   * The invoices whose address is still watched at `now`: open ones, and final ones until their
   * monitoring ends (a late payment is recorded, for the operator to refund, and its
   * confirmations followed).
   */
  watched(now: number): InvoiceView[] {
    return [...this.byId.values()].filter((i) => i.status === 'pending' || i.status === 'confirming' || Date.parse(i.monitoringExpiresAt) > now);
  }

  snapshot(): unknown {
    return { invoices: [...this.byId.values()] };
  }

  restore(snapshot: unknown): void {
    this.byId.clear();
    for (const invoice of (snapshot as { invoices?: InvoiceView[] }).invoices ?? []) this.byId.set(invoice.invoiceId, invoice);
  }
}
