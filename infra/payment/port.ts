/**
 * The PaymentProcessor port: where invoices are paid. One adapter per backend: the simulator
 * (development and tests) and Monero (a watch-only merchant wallet through monero-wallet-rpc).
 * A processor hands out an address per invoice and reports what was paid to it; it decides
 * nothing: the invoice decider (domain/invoice/decider.ts) does, from what it reports.
 *
 * Reads are stateless: `listPayments` returns every payment to the given addresses from the
 * beginning, each time, under an id that stays the same across reads and restarts. So a Relay
 * that restarts reads them all again and misses none, and the decider, which records a payment
 * once by that id, counts none twice.
 */
import { UnavailableError } from '../errors/unavailable.ts';

export interface PaymentRequest {
  readonly invoiceId: string;
  /** Atomic units of the processor's asset. */
  readonly amount: bigint;
  /** Shown by the payer's wallet (e.g. "Relay invoice inv_…"). */
  readonly description: string;
}

export interface PaymentAddress {
  /** Where to pay (BTCPay Greenfield's `destination`). */
  readonly address: string;
  /** The address's index in the merchant's wallet: what payments are looked up by (a Monero subaddress's minor index). */
  readonly addressIndex: number;
  /** A URI a wallet app opens with address and amount filled in (`monero:…?tx_amount=…`; Greenfield's `paymentLink`). */
  readonly paymentUri: string;
}

export interface ObservedPayment {
  /** Unique per payment and stable across reads: its transaction and its outputs to this address. */
  readonly paymentId: string;
  readonly txid: string;
  readonly addressIndex: number;
  /** Atomic units. */
  readonly amount: bigint;
  /** 0 while in the pool; may fall after a reorganisation. */
  readonly confirmations: number;
  /** In the pool, not yet in a block. */
  readonly inPool: boolean;
  /** The height of its block; null while in the pool. */
  readonly height: number | null;
  /** When it reached the processor: its pool arrival, or its block's time. */
  readonly receivedAt: Date;
  /** The processor saw another transaction spend the same money: it may never confirm. */
  readonly doubleSpendSeen: boolean;
  /**
   * The payer locked the money beyond the chain's usual unlock (Monero's `unlock_time`): it
   * cannot be spent until then. Reported, not judged here.
   */
  readonly timeLocked: boolean;
}

export type ProcessorHealth =
  | { readonly reachable: false; readonly reason: string }
  | { readonly reachable: true; /** The chain height the processor's wallet has reached. */ readonly height: number };

export interface PaymentProcessor {
  /** The asset it takes, e.g. `XMR`. */
  readonly asset: string;
  /** e.g. `mainnet`, `stagenet`, `regtest`, `simulated`. */
  readonly network: string;
  /** A new address for one invoice: every invoice gets its own. */
  createAddress(request: PaymentRequest): Promise<PaymentAddress>;
  /** Every payment to these addresses (in the pool and in blocks), oldest first. No addresses: none. */
  listPayments(addressIndices: readonly number[]): Promise<ObservedPayment[]>;
  checkHealth(): Promise<ProcessorHealth>;
  close(): Promise<void>;
}

/** The processor cannot be reached (wallet down, timed out, no wallet open): try again later. */
export class PaymentProcessorUnavailableError extends UnavailableError {
  override readonly name: string = 'PaymentProcessorUnavailableError';
}

/** The processor answered, and refused: trying again will not help (a wrong login, a request it rejects). */
export class PaymentProcessorError extends Error {
  override readonly name: string = 'PaymentProcessorError';
}

