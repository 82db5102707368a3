import { decimalsOf } from '../../../domain/billing/assets.ts';
import { parseDecimal } from '../../../domain/billing/decimal.ts';
import type { ObservedPayment } from '../../../infra/payment/port.ts';
import { simulateBlocks, simulateConfirmations, simulatePayment } from '../../../infra/payment/simulator/simulate-payments.ts';
import type { RelayContext } from '../../services/context.ts';

/** A payment as the CLI prints it (amounts as decimal strings: they pass 2^53). */
const printable = (payment: ObservedPayment) => ({ ...payment, amount: payment.amount.toString(), receivedAt: payment.receivedAt.toISOString() });

/**
 * `relay simulate pay --invoice ID [--amount X] [--confirmations N]`: the invoice's payer pays
 * its address on the simulated chain, its whole amount or `X` coins (less: an underpayment, more:
 * an overpayment), in the pool or with N confirmations. A running Relay on PAYMENT_PROCESSOR=simulator
 * sees it at its next watch round.
 */
export const simulatePay = (ctx: RelayContext, input: { invoiceId: string; amount?: string; confirmations?: number }) => {
  const invoice = ctx.models.invoices.invoice(input.invoiceId);
  if (!invoice) throw new Error(`No invoice ${input.invoiceId}`);
  if (invoice.network !== 'simulated') throw new Error(`The invoice ${input.invoiceId} is paid on ${invoice.asset} ${invoice.network}, not on the simulator`);
  let amount = BigInt(invoice.amount);
  if (input.amount !== undefined) {
    const parsed = parseDecimal(input.amount, decimalsOf(invoice.asset));
    if (parsed === undefined || parsed === 0n) throw new Error(`--amount must be a positive amount of ${invoice.asset} with at most ${decimalsOf(invoice.asset)} decimals, got ${input.amount}`);
    amount = parsed;
  }
  return printable(simulatePayment(ctx.config.dataDir, { to: { addressIndex: invoice.addressIndex }, amount, ...(input.confirmations !== undefined ? { confirmations: input.confirmations } : {}) }));
};

/** `relay simulate confirm --txid T --confirmations N`: more blocks on one payment, or fewer (a reorganisation). */
export const simulateConfirm = (ctx: RelayContext, txid: string, confirmations: number) => printable(simulateConfirmations(ctx.config.dataDir, txid, confirmations));

/** `relay simulate blocks --count N`: every simulated payment gains N confirmations. */
export const simulateMine = (ctx: RelayContext, count: number) => simulateBlocks(ctx.config.dataDir, count);
