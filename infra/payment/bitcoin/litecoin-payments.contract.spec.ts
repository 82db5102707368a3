import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { paymentProcessorContract } from '../../../test/contracts/payment-processor.contract.ts';
import { startLitecoinLocal, type LitecoinLocal } from '../../../test/support/litecoin-global-setup.ts';
import { chainForSuite } from '../../../test/support/local-chain.ts';
import { freePort } from '../../../test/support/relay-process.ts';
import { eventually } from '../../../test/support/eventually.ts';
import { PaymentProcessorError, PaymentProcessorUnavailableError, type ObservedPayment } from '../port.ts';
import { decimalOfAtomic } from './amount.ts';
import { integerOf, isRpcObject } from './bitcoin-json.ts';
import { createBitcoinPaymentProcessor } from './bitcoin-payment-processor.ts';
import { createBitcoinRpcClient, type BitcoinRpcClient } from './bitcoin-rpc-client.ts';

// The private regtest chain of scripts/litecoin-local.sh (litecoind: Bitcoin Core's RPC), started
// once per run by test/support/litecoin-global-setup.ts when the vitest project names it; else
// started here. Under CI it runs, never skips.
let local: LitecoinLocal | null = null;
let skipReason = '';
let stop: () => void = () => undefined;

beforeAll(() => {
  ({ local, skipReason, stop } = chainForSuite(inject('litecoinLocal'), inject('litecoinSkipReason'), startLitecoinLocal));
}, 600_000);
afterAll(() => stop(), 120_000);
beforeEach((context) => {
  if (!local) context.skip(skipReason);
});

const processorOn = (url: string, timeoutMs = 10_000) => createBitcoinPaymentProcessor({ rpcUrl: url, network: local!.network, asset: 'LTC', timeoutMs });

const count = async (customer: BitcoinRpcClient, method: string, field?: string) => {
  const answer = await customer.call(method);
  const value = integerOf(field === undefined ? answer : isRpcObject(answer) ? answer[field] : undefined);
  if (value === undefined) throw new Error(`${method} gave no count`);
  return value;
};

/** Starts each test on an empty mempool, so that a block holds only the test's payments. */
const settle = async (customer: BitcoinRpcClient, mine: (blocks: number) => Promise<void>) => {
  for (let i = 0; i < 3 && (await count(customer, 'getmempoolinfo', 'size')) > 0; i++) await mine(1);
};

describe('Litecoin over Bitcoin Core RPC (litecoind, regtest)', () => {
  paymentProcessorContract('Litecoin (watch-only wallet, regtest)', async () => {
    const processor = processorOn(local!.rpcUrl);
    const customer = createBitcoinRpcClient({ url: local!.customerRpcUrl, timeoutMs: 60_000 });
    const mineTo = async (blocks: number, address: string) => {
      await customer.call('generatetoaddress', [blocks, address]);
    };
    const mine = (blocks: number) => mineTo(blocks, local!.customerAddress);
    await settle(customer, mine);
    return {
      processor,
      amount: 3_333_334n, // 0.03333334 LTC: not a float's friend
      visibleWithinMs: 10_000,
      pay: async (address, amount) => {
        // The amount as a decimal string: litecoind reads it exactly.
        const txid = await customer.call('sendtoaddress', [address, decimalOfAtomic(amount)]);
        if (typeof txid !== 'string') throw new Error('the customer wallet gave no transaction id');
        return txid;
      },
      mine,
      reorg: async (depth) => {
        const height = await count(customer, 'getblockcount');
        const first = await customer.call('getblockhash', [height - depth + 1]);
        await customer.call('invalidateblock', [first]);
        // To a new address: the new block must differ from the one taken back.
        const fresh = await customer.call('getnewaddress', ['reorg']);
        if (typeof fresh !== 'string') throw new Error('the customer wallet gave no address');
        await mineTo(1, fresh);
      },
      reopen: async () => processorOn(local!.rpcUrl),
      unreachable: async () => processorOn(`http://relay:secret@127.0.0.1:${await freePort()}/wallet/merchant`, 2000),
      teardown: async () => {
        await processor.close();
        customer.close();
      },
    };
  });

  describe('Litecoin adapter: what the contract leaves to it', () => {
    it('labels each address with its invoice, indexes it by its derivation path, and puts the amount in LTC in the payment URI', async () => {
      const processor = processorOn(local!.rpcUrl);
      const made = await processor.createAddress({ invoiceId: 'inv_label', amount: 150_000_001n, description: 'Relay invoice inv_label' });
      expect(made.address).toMatch(/^rltc1/);
      expect(made.paymentUri).toBe(`litecoin:${made.address}?amount=1.50000001&label=Relay%20invoice%20inv_label`);
      const wallet = createBitcoinRpcClient({ url: local!.rpcUrl });
      const info = await wallet.call('getaddressinfo', [made.address]);
      expect(info).toMatchObject({ iswatchonly: true, ismine: false, labels: ['relay invoice inv_label'], hdkeypath: `m/0/${made.addressIndex}` });
      const next = await processor.createAddress({ invoiceId: 'inv_next', amount: 1n, description: '' });
      expect(next.addressIndex).toBe(made.addressIndex + 1);
      expect(next.paymentUri).toBe(`litecoin:${next.address}?amount=0.00000001`);
      wallet.close();
      await processor.close();
    });

    it('reads amounts exactly, to the litoshi', async () => {
      const processor = processorOn(local!.rpcUrl);
      const customer = createBitcoinRpcClient({ url: local!.customerRpcUrl, timeoutMs: 60_000 });
      const to = await processor.createAddress({ invoiceId: 'inv_exact', amount: 1n, description: '' });
      const amounts = [10_000_001n, 70_000_007n]; // 0.10000001 and 0.70000007 LTC
      for (const amount of amounts) await customer.call('sendtoaddress', [to.address, decimalOfAtomic(amount)]);
      let payments: ObservedPayment[] = [];
      await eventually(async () => {
        payments = await processor.listPayments([to.addressIndex]);
        expect(payments).toHaveLength(2);
      }, 10_000);
      expect(payments.map((p) => p.amount).sort()).toEqual(amounts);
      expect(payments.every((p) => /^[0-9a-f]{64}:\d+$/.test(p.paymentId))).toBe(true);
      customer.close();
      await processor.close();
    });

    it('tells a refused login apart from a node that is down: it is not worth retrying', async () => {
      const url = new URL(local!.rpcUrl);
      url.password = 'wrong-password';
      const processor = processorOn(url.toString());
      const error = await processor.listPayments([1]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentProcessorError);
      expect(error).not.toBeInstanceOf(PaymentProcessorUnavailableError);
      expect((error as Error).message).not.toContain('wrong-password');
      await expect(processor.checkHealth()).rejects.toBeInstanceOf(PaymentProcessorError);
      await processor.close();
    });

    it('reports a wallet the node has not loaded as unavailable', async () => {
      const url = new URL(local!.rpcUrl);
      url.pathname = '/wallet/not-loaded';
      const processor = processorOn(url.toString());
      await expect(processor.listPayments([1])).rejects.toBeInstanceOf(PaymentProcessorUnavailableError);
      expect(await processor.checkHealth()).toMatchObject({ reachable: false, reason: expect.stringContaining('not-loaded') });
      await processor.close();
    });

    it('reads the chain height for the health check', async () => {
      const processor = processorOn(local!.rpcUrl);
      expect(await processor.checkHealth()).toEqual({ reachable: true, height: expect.any(Number) });
      await processor.close();
    });
  });
});
