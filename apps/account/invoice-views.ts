import { formatDecimal } from '../../domain/billing/decimal.ts';
import { GREENFIELD_STATUS } from '../../domain/invoice/events.ts';
import { additionalStatusOf, type InvoiceView } from '../../projections/invoices/invoices-projection.ts';
import { decimalsOf } from '../../domain/billing/assets.ts';
import type { z } from 'zod';
import type { invoiceResponse, paymentStatusResponse } from './billing-schemas.ts';

/** An amount of atomic units as the asset's decimal (`33333333334` XMR → `0.033333333334`). */
const coins = (atomic: string, asset: string) => formatDecimal(BigInt(atomic), decimalsOf(asset));

/** What the payer needs, and where the invoice stands: the shape of `GET /invoices/:invoiceId` (docs/billing.md). */
export const invoiceView = (invoice: InvoiceView): z.output<typeof invoiceResponse> => ({
  invoiceId: invoice.invoiceId,
  status: invoice.status,
  greenfieldStatus: GREENFIELD_STATUS[invoice.status],
  additionalStatus: additionalStatusOf(invoice),
  planId: invoice.planId,
  period: invoice.period,
  price: invoice.price,
  currency: invoice.currency,
  asset: invoice.asset,
  network: invoice.network,
  amount: coins(invoice.amount, invoice.asset),
  address: invoice.address,
  paymentUri: invoice.paymentUri,
  requiredConfirmations: invoice.requiredConfirmations,
  totalReceived: coins(invoice.totalReceived, invoice.asset),
  createdAt: invoice.createdAt,
  expiresAt: invoice.expiresAt,
  monitoringExpiresAt: invoice.monitoringExpiresAt,
  paidAt: invoice.paidAt,
  cancelledAt: invoice.cancelledAt,
  expiredAt: invoice.expiredAt,
});

/** `GET /invoices/:invoiceId/payment-status`: the status and every payment seen, with its confirmations. */
export const paymentStatusView = (invoice: InvoiceView): z.output<typeof paymentStatusResponse> => ({
  invoiceId: invoice.invoiceId,
  status: invoice.status,
  additionalStatus: additionalStatusOf(invoice),
  asset: invoice.asset,
  amount: coins(invoice.amount, invoice.asset),
  totalReceived: coins(invoice.totalReceived, invoice.asset),
  amountDue: coins((BigInt(invoice.amount) > BigInt(invoice.totalReceived) ? BigInt(invoice.amount) - BigInt(invoice.totalReceived) : 0n).toString(), invoice.asset),
  overpaidBy: coins(invoice.overpaidBy, invoice.asset),
  lateReceived: coins(invoice.lateReceived, invoice.asset),
  requiredConfirmations: invoice.requiredConfirmations,
  payments: invoice.payments.map((p) => ({ txid: p.txid, amount: coins(p.amount, invoice.asset), confirmations: p.confirmations, late: p.late, receivedAt: p.receivedAt })),
  expiresAt: invoice.expiresAt,
  paidAt: invoice.paidAt,
});
