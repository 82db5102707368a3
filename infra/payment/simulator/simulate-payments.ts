/**
 * What the CLI (`relay simulate payment …`, to come) and tests do to the payment simulator of a
 * DATA_DIR, whether or not a server runs on it: pay an invoice's address, with N confirmations
 * or in the pool; change a payment's confirmations (a reorganisation of one payment); mine or pop
 * blocks of the pretend chain; fake an outage. Each call opens the simulator's file, does its
 * work in one transaction and closes it; a running Relay sees the result at its next read.
 */
import { PaymentSimulatorStore } from './payment-simulator-store.ts';
import { observedOf } from './simulator-payment-processor.ts';
import type { ObservedPayment } from '../port.ts';

const withStore = <T>(dataDir: string, work: (store: PaymentSimulatorStore) => T): T => {
  const store = new PaymentSimulatorStore(dataDir);
  try {
    return work(store);
  } finally {
    store.close();
  }
};

export interface SimulatedPaymentInput {
  /** The invoice's address, or its index. */
  readonly to: { readonly address: string } | { readonly addressIndex: number };
  /** Atomic units. */
  readonly amount: bigint;
  /** Default 0: in the pool. */
  readonly confirmations?: number;
  /** Marks it double-spent, as a processor that saw a conflicting transaction does. */
  readonly doubleSpend?: boolean;
}

/** Pays an address handed out by the simulator; returns the payment as the processor reports it. */
export const simulatePayment = (dataDir: string, input: SimulatedPaymentInput): ObservedPayment =>
  withStore(dataDir, (store) => {
    const target = store.address(input.to);
    if (!target) throw new RangeError('The payment simulator has no such address');
    const options = { ...(input.confirmations !== undefined && { confirmations: input.confirmations }), ...(input.doubleSpend !== undefined && { doubleSpend: input.doubleSpend }) };
    return observedOf(store.pay(target.addressIndex, input.amount, options));
  });

/** Gives a payment `confirmations` (fewer than it had: a reorganisation; 0: back in the pool). */
export const simulateConfirmations = (dataDir: string, txid: string, confirmations: number): ObservedPayment =>
  withStore(dataDir, (store) => observedOf(store.setConfirmations(txid, confirmations)));

/** Mines `blocks` blocks: every payment gains as many confirmations, the pool goes into the first. Returns the tip. */
export const simulateBlocks = (dataDir: string, blocks: number): number => withStore(dataDir, (store) => store.mine(blocks));

/** Takes back the last `depth` blocks, then mines one: a reorganisation as a chain has one. Returns the tip. */
export const simulateReorg = (dataDir: string, depth: number): number =>
  withStore(dataDir, (store) => {
    store.popBlocks(depth);
    return store.mine(1);
  });

/** Makes the simulator unreachable with `reason`, or reachable again (null). */
export const simulateOutage = (dataDir: string, reason: string | null): void => withStore(dataDir, (store) => store.setOutage(reason));
