import type { InvoiceCreatedData } from './events.ts';

/** Amounts are bigint atomic units here; the events carry them as decimal strings. */
export type InvoiceCommand =
  | {
      type: 'CreateInvoice';
      /** What InvoiceCreated records, with its amount and times in the domain's types. */
      data: Omit<InvoiceCreatedData, 'amount' | 'expiresAt' | 'monitoringExpiresAt' | 'createdAt'> & {
        amount: bigint;
        expiresAt: Date;
        monitoringExpiresAt: Date;
        now: Date;
      };
    }
  /**
   * What the payment processor reports of one payment to the invoice's address, new or seen
   * before: the watcher sends every payment it reads, every time; the decider keeps what is new.
   */
  | {
      type: 'RecordPayment';
      data: { paymentId: string; txid: string; amount: bigint; confirmations: number; receivedAt: Date; now: Date };
    }
  /** The owner's `POST /invoices/:invoiceId/cancel`. */
  | { type: 'CancelInvoice'; data: { userId: string; now: Date } }
  /** A timer's: expires the invoice if its time is up, else nothing happens. */
  | { type: 'ExpireInvoice'; data: { now: Date } };
