/**
 * The simulator adapter of the PaymentProcessor port: the default where no wallet is configured,
 * and what tests and demos pay through (`simulate-payments.ts`). Its chain and payments live in
 * DATA_DIR (payment-simulator-store.ts), so a restarted Relay reads the same payments again.
 */
import type { ObservedPayment, PaymentAddress, PaymentProcessor, PaymentRequest, ProcessorHealth } from '../port.ts';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { healthOf } from '../processor-answers.ts';
import { PaymentSimulatorStore, type SimulatedPayment } from './payment-simulator-store.ts';

export interface SimulatorPaymentProcessorOptions {
  readonly dataDir: string;
  /** Default `XMR`. */
  readonly asset?: string;
}

/** The simulator's payment URIs: not a real wallet's scheme, so that no wallet app pays one by mistake. */
export const simulatedPaymentUri = (address: string, amount: bigint, description: string) =>
  `relay-simulator:${address}?amount=${amount}${description ? `&tx_description=${encodeURIComponent(description)}` : ''}`;

/** Each simulated payment is one output of its transaction: output 0. */
export const simulatedPaymentId = (txid: string) => `${txid}:0`;

export const observedOf = (payment: SimulatedPayment): ObservedPayment => ({
  paymentId: simulatedPaymentId(payment.txid),
  txid: payment.txid,
  addressIndex: payment.addressIndex,
  amount: payment.amount,
  confirmations: payment.confirmations,
  inPool: payment.height === null,
  height: payment.height,
  receivedAt: payment.receivedAt,
  doubleSpendSeen: payment.doubleSpend,
  timeLocked: false,
});

export class SimulatorPaymentProcessor implements PaymentProcessor {
  readonly asset: string;
  readonly network = 'simulated';
  private readonly store: PaymentSimulatorStore;

  constructor(options: SimulatorPaymentProcessorOptions) {
    this.asset = options.asset ?? 'XMR';
    this.store = new PaymentSimulatorStore(options.dataDir);
  }

  async createAddress(request: PaymentRequest): Promise<PaymentAddress> {
    return this.use(() => {
      if (request.amount <= 0n) throw new RangeError('A payment amount must be more than zero');
      const { address, addressIndex } = this.store.createAddress(request.invoiceId, request.amount);
      return { address, addressIndex, paymentUri: simulatedPaymentUri(address, request.amount, request.description) };
    });
  }

  async listPayments(addressIndices: readonly number[]): Promise<ObservedPayment[]> {
    for (const index of addressIndices) if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`Not an address index: ${index}`);
    return this.use(() => this.store.payments(addressIndices).map(observedOf));
  }

  async checkHealth(): Promise<ProcessorHealth> {
    return healthOf(() => this.use(() => this.store.tip()));
  }

  async close(): Promise<void> {
    this.store.close();
  }

  /** Runs `work` unless the simulator is closed or told to be down; a store that cannot be used is down too. */
  private use<T>(work: () => T): T {
    if (!this.store.isOpen) throw new PaymentProcessorUnavailableError('The payment simulator is closed');
    let outage: string | undefined;
    try {
      outage = this.store.outage();
    } catch (error) {
      throw new PaymentProcessorUnavailableError(`The payment simulator's store cannot be read: ${(error as Error).message}`);
    }
    if (outage !== undefined) throw new PaymentProcessorUnavailableError(`The payment simulator is down: ${outage}`);
    try {
      return work();
    } catch (error) {
      if (error instanceof RangeError) throw error;
      throw new PaymentProcessorUnavailableError(`The payment simulator's store failed: ${(error as Error).message}`);
    }
  }
}

export const createSimulatorPaymentProcessor = (options: SimulatorPaymentProcessorOptions): PaymentProcessor => new SimulatorPaymentProcessor(options);
