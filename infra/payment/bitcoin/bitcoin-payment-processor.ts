/**
 * The Bitcoin-family adapter of the PaymentProcessor port: the merchant's wallet in Bitcoin
 * Core (bitcoind) or a node that speaks its RPC (litecoind, Litecoin Core 0.21), through the
 * node's JSON-RPC at `/wallet/<name>`. The wallet should be watch-only (made with
 * `disable_private_keys` and the merchant's public descriptor imported into its keypool, as
 * scripts/litecoin-local.sh does): it sees payments and cannot spend.
 *
 * - An address per invoice: `getnewaddress` with the invoice id in its label. A Bitcoin address
 *   has no index of its own; its `addressIndex` is the last step of its derivation path
 *   (`getaddressinfo`'s `hdkeypath`: m/0/7, m/0'/0'/7', m/84'/1'/0'/0/7 → 7), which stays the
 *   same across restarts and reads. Index 0 is the wallet's main address, never an invoice's.
 * - Payments: `listreceivedbyaddress` (mempool included, minconf 0) names the addresses that
 *   were paid and their transactions; those of the asked indices are read with `gettransaction`,
 *   one payment per output (`<txid>:<vout>`). A transaction in the mempool has 0 confirmations;
 *   after a reorganisation (`invalidateblock`) the node reports fewer, or 0 when it went back to
 *   the mempool.
 * - Amounts come as JSON decimals of the coin and are read from their text into atomic units
 *   (satoshi, litoshi) as bigint, never through a float (amount.ts).
 */
import type { ObservedPayment, PaymentAddress, PaymentProcessor, PaymentRequest, ProcessorHealth } from '../port.ts';
import { PaymentProcessorError, PaymentProcessorUnavailableError } from '../port.ts';
import { healthOf, sortPayments } from '../processor-answers.ts';
import { bip21PaymentUri, uriSchemeOf } from './amount.ts';
import { atomicAmountOf, integerOf, isRpcObject, type RpcJson, type RpcObject } from './bitcoin-json.ts';
import { BitcoinRpcUnavailableError, createBitcoinRpcClient, type BitcoinRpcClient } from './bitcoin-rpc-client.ts';

export interface BitcoinPaymentProcessorOptions {
  /** The merchant's wallet, login in the URL: `http://user:password@127.0.0.1:19491/wallet/merchant`. */
  readonly rpcUrl: string;
  /** `main`/`mainnet`, `test`, `signet`, `regtest`… as the operator names it. */
  readonly network: string;
  /** The asset it takes: `LTC` (default, for litecoind) or `BTC` (bitcoind). */
  readonly asset?: string;
  /** The payment URI's scheme. Default by asset: `litecoin`, `bitcoin`. */
  readonly uriScheme?: string;
  /** Each call's limit. Default 10000. */
  readonly timeoutMs?: number;
}

/** The label the wallet's main address (index 0) gets if getnewaddress hands it to an invoice. */
export const MAIN_ADDRESS_LABEL = 'relay main address';

const malformed = (what: string) => new BitcoinRpcUnavailableError(`The Bitcoin RPC answered with ${what}`);

const objectOf = (value: RpcJson | undefined, what: string): RpcObject => {
  if (!isRpcObject(value)) throw malformed(`no ${what}`);
  return value;
};

const TXID = /^[0-9a-f]{64}$/;
/** The last step of a BIP32 path (`m/84'/1'/0'/0/7` → 7, `m/0'/0'/7'` → 7). */
const LAST_STEP = /^m(?:\/\d+['hH]?)*\/(\d+)['hH]?$/;

/** The index of an address from its derivation path, or undefined when it has none. */
export const indexOfKeyPath = (path: RpcJson | undefined): number | undefined => {
  if (typeof path !== 'string') return undefined;
  const match = LAST_STEP.exec(path);
  if (!match) return undefined;
  const index = Number(match[1]);
  return Number.isSafeInteger(index) ? index : undefined;
};

/**
 * The payments of one `gettransaction` answer to `address` (one per output), as of `index`;
 * none when the transaction is conflicted (negative confirmations: it will not confirm).
 */
export const paymentsOfTransaction = (answer: RpcJson, address: string, index: number): ObservedPayment[] => {
  const transaction = objectOf(answer, 'transaction');
  const txid = transaction.txid;
  if (typeof txid !== 'string' || !TXID.test(txid)) throw malformed('a bad transaction id');
  const confirmations = integerOf(transaction.confirmations);
  if (confirmations === undefined) throw malformed('a bad confirmation count');
  if (confirmations < 0) return [];
  const inPool = confirmations === 0;
  let height: number | null = null;
  if (!inPool) {
    height = integerOf(transaction.blockheight) ?? null;
    if (height === null) throw malformed('a mined transaction without its block height');
  }
  // `time`: when the wallet first saw it, in the mempool, or its block's time when it first saw it in a block.
  const time = integerOf(transaction.time) ?? integerOf(transaction.timereceived) ?? integerOf(transaction.blocktime) ?? 0;
  const conflicts = transaction.walletconflicts;
  const details = transaction.details;
  if (!Array.isArray(details)) throw malformed('a transaction without details');
  const payments: ObservedPayment[] = [];
  const seen = new Set<number>();
  for (const entry of details) {
    const detail = objectOf(entry, 'transaction detail');
    if (detail.category !== 'receive' || detail.address !== address) continue;
    const vout = integerOf(detail.vout);
    if (vout === undefined || vout < 0) throw malformed('a bad output number');
    // Bitcoin Core lists an output once per wallet ownership kind; one payment per output.
    if (seen.has(vout)) continue;
    seen.add(vout);
    const amount = atomicAmountOf(detail.amount);
    if (amount === undefined || amount < 0n) throw malformed('a bad amount');
    payments.push({
      paymentId: `${txid}:${vout}`,
      txid,
      addressIndex: index,
      amount,
      confirmations,
      inPool,
      height,
      receivedAt: new Date(time * 1000),
      doubleSpendSeen: Array.isArray(conflicts) && conflicts.length > 0,
      // An output of a mined transaction can be spent at once (nLockTime only delays mining).
      timeLocked: false,
    });
  }
  return payments;
};

export class BitcoinPaymentProcessor implements PaymentProcessor {
  readonly asset: string;
  readonly network: string;
  private readonly uriScheme: string;
  private readonly client: BitcoinRpcClient;
  /** Address → derivation index: both fixed for good once the wallet handed the address out. */
  private readonly indexOfAddress = new Map<string, number | null>();
  private closed = false;

  constructor(options: BitcoinPaymentProcessorOptions) {
    this.client = createBitcoinRpcClient({ url: options.rpcUrl, timeoutMs: options.timeoutMs ?? 10_000 });
    this.network = options.network;
    this.asset = options.asset ?? 'LTC';
    this.uriScheme = options.uriScheme ?? uriSchemeOf(this.asset);
  }

  async createAddress(request: PaymentRequest): Promise<PaymentAddress> {
    this.checkOpen();
    if (request.amount <= 0n) throw new RangeError('A payment amount must be more than zero');
    // At most once more: index 0 (the wallet's main address) is handed out only by a fresh wallet.
    for (let attempt = 0; attempt < 2; attempt++) {
      const address = await this.client.call('getnewaddress', [`relay invoice ${request.invoiceId}`]);
      if (typeof address !== 'string' || address.length === 0) throw malformed('no address');
      const addressIndex = await this.addressIndexOf(address);
      if (addressIndex === null)
        throw new PaymentProcessorError('The wallet hands out addresses without a derivation path (hdkeypath): use an HD wallet, or import a ranged descriptor into its keypool');
      if (addressIndex === 0) {
        await this.client.call('setlabel', [address, MAIN_ADDRESS_LABEL]);
        continue;
      }
      return { address, addressIndex, paymentUri: bip21PaymentUri(this.uriScheme, address, request.amount, request.description) };
    }
    throw malformed('the main address twice');
  }

  async listPayments(addressIndices: readonly number[]): Promise<ObservedPayment[]> {
    this.checkOpen();
    for (const index of addressIndices) if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`Not an address index: ${index}`);
    if (addressIndices.length === 0) return [];
    const wanted = new Set(addressIndices);
    // minconf 0 (the mempool too), no empty addresses, watch-only addresses included.
    const received = await this.client.call('listreceivedbyaddress', [0, false, true]);
    if (!Array.isArray(received)) throw malformed('no list of addresses');
    const byIndex = new Map<number, string>();
    const reads: Array<{ address: string; index: number; txids: string[] }> = [];
    for (const item of received) {
      const entry = objectOf(item, 'address entry');
      const address = entry.address;
      if (typeof address !== 'string') throw malformed('an entry without its address');
      const index = await this.addressIndexOf(address);
      if (index === null || !wanted.has(index)) continue;
      const other = byIndex.get(index);
      if (other !== undefined && other !== address)
        throw new PaymentProcessorError(`Two addresses of the wallet have derivation index ${index} (${other}, ${address}): give invoices addresses of one type only`);
      byIndex.set(index, address);
      const txids = entry.txids;
      if (!Array.isArray(txids) || txids.some((txid) => typeof txid !== 'string' || !TXID.test(txid))) throw malformed('a bad list of transactions');
      reads.push({ address, index, txids: txids as string[] });
    }
    const payments: ObservedPayment[] = [];
    for (const { address, index, txids } of reads)
      for (const txid of new Set(txids)) payments.push(...paymentsOfTransaction(await this.client.call('gettransaction', [txid, true]), address, index));
    return sortPayments(payments);
  }

  async checkHealth(): Promise<ProcessorHealth> {
    return healthOf(async () => {
      this.checkOpen();
      // The wallet is loaded (else -18: unavailable), and the chain's height.
      objectOf(await this.client.call('getwalletinfo'), 'wallet info');
      const chain = objectOf(await this.client.call('getblockchaininfo'), 'chain info');
      const height = integerOf(chain.blocks);
      if (height === undefined || height < 0) throw malformed('a bad height');
      return height;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.client.close();
  }

  /** The address's derivation index (null: it has none), asked once per address. */
  private async addressIndexOf(address: string): Promise<number | null> {
    const known = this.indexOfAddress.get(address);
    if (known !== undefined) return known;
    const info = objectOf(await this.client.call('getaddressinfo', [address]), 'address info');
    // A change address is never an invoice's.
    const index = info.ischange === true ? null : (indexOfKeyPath(info.hdkeypath) ?? null);
    this.indexOfAddress.set(address, index);
    return index;
  }

  private checkOpen(): void {
    if (this.closed) throw new PaymentProcessorUnavailableError(`The ${this.asset} payment processor is closed`);
  }
}

export const createBitcoinPaymentProcessor = (options: BitcoinPaymentProcessorOptions): PaymentProcessor => new BitcoinPaymentProcessor(options);
