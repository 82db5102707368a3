/**
 * The Monero adapter of the PaymentProcessor port: the merchant's wallet through
 * monero-wallet-rpc. The wallet should be watch-only (made with `generate_from_keys` from the
 * address and the private view key): it sees payments and their confirmations and cannot spend,
 * so no spend key is on the Relay host. (Relay does not ask the wallet whether it can spend: the
 * calls that would tell hand out the spend key, or, like `sign` on a watch-only wallet of
 * monero-wallet-rpc 0.18.0, crash it.)
 *
 * - An address per invoice: a subaddress of `accountIndex`, made by `create_address` with the
 *   invoice id in its label.
 * - Payments: `get_transfers {in, pool}` filtered to the invoices' subaddress indices; one entry
 *   per transaction and subaddress, so the payment id is `<txid>:<account>/<index>`. Pool entries
 *   have no confirmations and height 0; mined ones say how many confirmations they have, which
 *   falls after a reorganisation once the wallet has seen the new chain.
 * - Before reading, the wallet is asked to `refresh` (the wallet's own refresh runs every 20 s
 *   by default), so that a read tells what the daemon knows now.
 */
import type { ObservedPayment, PaymentAddress, PaymentProcessor, PaymentRequest, ProcessorHealth } from '../port.ts';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { healthOf, sortPayments } from '../processor-answers.ts';
import { moneroPaymentUri } from './payment-uri.ts';
import type { WalletJson } from './wallet-json.ts';
import { createWalletRpcClient, MoneroWalletUnavailableError, type WalletRpcClient } from './wallet-rpc-client.ts';

export interface MoneroPaymentProcessorOptions {
  /** monero-wallet-rpc's address, its Digest login in the URL if it has one: `http://user:password@127.0.0.1:18082`. */
  readonly walletRpcUrl: string;
  /** `mainnet`, `stagenet`, `testnet`, or `regtest` for a private chain. */
  readonly network: string;
  /** The wallet account whose subaddresses invoices get. Default 0. */
  readonly accountIndex?: number;
  /** Each call's limit. Default 10000. */
  readonly timeoutMs?: number;
  /** The limit of the refresh before a read (it scans the blocks the wallet has not seen). Default 30000. */
  readonly refreshTimeoutMs?: number;
  /** Refresh the wallet before each read of payments. Default true. */
  readonly refreshBeforeRead?: boolean;
}

type JsonObject = { [key: string]: WalletJson };

const malformed = (what: string) => new MoneroWalletUnavailableError(`monero-wallet-rpc answered with ${what}`);

const objectOf = (value: WalletJson | undefined, what: string): JsonObject => {
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) throw malformed(`no ${what}`);
  return value;
};

/** A small count (an index, confirmations, a height) as a number; it cannot be past 2^53. */
const smallOf = (value: WalletJson | undefined, what: string): number => {
  if (typeof value !== 'bigint' || value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed(`a bad ${what}`);
  return Number(value);
};

const amountOf = (value: WalletJson | undefined): bigint => {
  if (typeof value !== 'bigint' || value < 0n) throw malformed('a bad amount');
  return value;
};

const TXID = /^[0-9a-f]{64}$/;

/** One entry of `get_transfers`'s `in` or `pool`, or undefined when it is not to one of `indices` of the account. */
export const paymentOfTransfer = (entry: WalletJson, accountIndex: number, indices: ReadonlySet<number>): ObservedPayment | undefined => {
  const transfer = objectOf(entry, 'a transfer');
  const subaddress = objectOf(transfer.subaddr_index, "a transfer's subaddress");
  const major = smallOf(subaddress.major, 'account index');
  const minor = smallOf(subaddress.minor, 'subaddress index');
  if (major !== accountIndex || !indices.has(minor)) return undefined;
  const txid = transfer.txid;
  if (typeof txid !== 'string' || !TXID.test(txid)) throw malformed('a bad transaction id');
  const inPool = transfer.type === 'pool';
  if (!inPool && transfer.type !== 'in') return undefined;
  const height = inPool ? null : smallOf(transfer.height, 'height');
  const confirmations = inPool ? 0 : transfer.confirmations === undefined ? 0 : smallOf(transfer.confirmations, 'confirmation count');
  const timestamp = transfer.timestamp === undefined ? 0 : smallOf(transfer.timestamp, 'timestamp');
  const unlockTime = transfer.unlock_time === undefined ? 0n : transfer.unlock_time;
  return {
    paymentId: `${txid}:${major}/${minor}`,
    txid,
    addressIndex: minor,
    amount: amountOf(transfer.amount),
    confirmations,
    inPool,
    height: height === 0 ? null : height,
    receivedAt: new Date(timestamp * 1000),
    doubleSpendSeen: transfer.double_spend_seen === true,
    timeLocked: typeof unlockTime === 'bigint' && unlockTime !== 0n,
  };
};

/** The payments of a `get_transfers` result: a payment both in the pool and mined (read in between) once, as mined; oldest first. */
export const paymentsOfTransfers = (result: WalletJson, accountIndex: number, indices: ReadonlySet<number>): ObservedPayment[] => {
  const lists = objectOf(result, 'result');
  const byId = new Map<string, ObservedPayment>();
  for (const key of ['pool', 'in'] as const) {
    const list = lists[key];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw malformed(`a bad "${key}" list`);
    for (const entry of list) {
      const payment = paymentOfTransfer(entry, accountIndex, indices);
      if (payment) byId.set(payment.paymentId, payment);
    }
  }
  return sortPayments([...byId.values()]);
};

export class MoneroPaymentProcessor implements PaymentProcessor {
  readonly asset = 'XMR';
  readonly network: string;
  private readonly client: WalletRpcClient;
  private readonly accountIndex: number;
  private readonly refreshTimeoutMs: number;
  private readonly refreshBeforeRead: boolean;
  private closed = false;

  constructor(options: MoneroPaymentProcessorOptions) {
    this.client = createWalletRpcClient({ url: options.walletRpcUrl, timeoutMs: options.timeoutMs ?? 10_000 });
    this.network = options.network;
    this.accountIndex = options.accountIndex ?? 0;
    if (!Number.isSafeInteger(this.accountIndex) || this.accountIndex < 0) throw new RangeError('accountIndex must be an integer >= 0');
    this.refreshTimeoutMs = options.refreshTimeoutMs ?? 30_000;
    this.refreshBeforeRead = options.refreshBeforeRead ?? true;
  }

  async createAddress(request: PaymentRequest): Promise<PaymentAddress> {
    this.checkOpen();
    if (request.amount <= 0n) throw new RangeError('A payment amount must be more than zero');
    const result = objectOf(await this.client.call('create_address', { account_index: this.accountIndex, label: `relay invoice ${request.invoiceId}` }), 'result');
    const address = result.address;
    if (typeof address !== 'string' || address.length === 0) throw malformed('no address');
    const addressIndex = smallOf(result.address_index, 'subaddress index');
    return { address, addressIndex, paymentUri: moneroPaymentUri(address, request.amount, request.description) };
  }

  async listPayments(addressIndices: readonly number[]): Promise<ObservedPayment[]> {
    this.checkOpen();
    for (const index of addressIndices) if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`Not an address index: ${index}`);
    // No indices would ask the wallet for every subaddress's payments.
    if (addressIndices.length === 0) return [];
    const indices = new Set(addressIndices);
    if (this.refreshBeforeRead) await this.client.call('refresh', {}, { timeoutMs: this.refreshTimeoutMs });
    const result = await this.client.call('get_transfers', { in: true, pool: true, account_index: this.accountIndex, subaddr_indices: [...indices] });
    return paymentsOfTransfers(result, this.accountIndex, indices);
  }

  async checkHealth(): Promise<ProcessorHealth> {
    return healthOf(async () => {
      this.checkOpen();
      const result = objectOf(await this.client.call('get_height'), 'result');
      return smallOf(result.height, 'height');
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.client.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new PaymentProcessorUnavailableError('The Monero payment processor is closed');
  }
}

export const createMoneroPaymentProcessor = (options: MoneroPaymentProcessorOptions): PaymentProcessor => new MoneroPaymentProcessor(options);
