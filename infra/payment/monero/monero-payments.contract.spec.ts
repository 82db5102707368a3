import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { paymentProcessorContract } from '../../../test/contracts/payment-processor.contract.ts';
import { startMoneroLocal, type MoneroLocal } from '../../../test/support/monero-global-setup.ts';
import { chainForSuite } from '../../../test/support/local-chain.ts';
import { daemonPost, moneroCustomer } from '../../../test/support/monero-customer.ts';
import { freePort } from '../../../test/support/relay-process.ts';
import { PaymentProcessorError, PaymentProcessorUnavailableError } from '../port.ts';
import { createMoneroPaymentProcessor } from './monero-payment-processor.ts';
import { createWalletRpcClient, type WalletRpcClient } from './wallet-rpc-client.ts';

// The private regtest chain of scripts/monero-local.sh, started once per run by
// test/support/monero-global-setup.ts when the vitest project names it; else started here.
// Under CI it runs, never skips.
let local: MoneroLocal | null = null;
let skipReason = '';
let stop: () => void = () => undefined;

beforeAll(() => {
  ({ local, skipReason, stop } = chainForSuite(inject('moneroLocal'), inject('moneroSkipReason'), startMoneroLocal));
}, 600_000);
afterAll(() => stop(), 120_000);
beforeEach((context) => {
  if (!local) context.skip(skipReason);
});

const processorOn = (url: string, timeoutMs = 10_000) => createMoneroPaymentProcessor({ walletRpcUrl: url, network: local!.network, timeoutMs });

/**
 * Starts each test on an empty pool, so that a block holds only the test's payments: what an
 * earlier test left is mined. A transaction that monerod will not mine again (after a
 * reorganisation below the height it was made at, it marks it failed for good) is flushed, and
 * the customer's wallet told to check which of its outputs are spent.
 */
const settle = async (daemon: WalletRpcClient, customer: WalletRpcClient, mine: (blocks: number) => Promise<void>) => {
  const poolSize = async () => Number(((await daemon.call('get_info')) as { tx_pool_size: bigint }).tx_pool_size);
  for (let i = 0; i < 3 && (await poolSize()) > 0; i++) await mine(1);
  if ((await poolSize()) > 0) {
    await daemon.call('flush_txpool');
    await customer.call('rescan_spent');
  }
  await customer.call('refresh');
};

describe('Monero over monero-wallet-rpc (regtest)', () => {
  paymentProcessorContract('Monero (watch-only wallet, regtest)', async () => {
    const processor = processorOn(local!.walletRpcUrl);
    const customer = createWalletRpcClient({ url: local!.customerWalletRpcUrl, timeoutMs: 20_000 });
    const daemon = createWalletRpcClient({ url: local!.daemonRpcUrl, timeoutMs: 60_000 });
    const { pay, mine, mineAnyway } = moneroCustomer({ customer, daemon, daemonRpcUrl: local!.daemonRpcUrl, customerAddress: local!.customerAddress });
    await settle(daemon, customer, mineAnyway);
    return {
      processor,
      amount: 1_234_567_890_123n, // about 1.23 XMR
      visibleWithinMs: 20_000,
      pay,
      mine,
      reorg: async (depth) => {
        await daemonPost(local!.daemonRpcUrl, '/pop_blocks', { nblocks: depth });
        await mine(1);
      },
      reopen: async () => processorOn(local!.walletRpcUrl),
      unreachable: async () => processorOn(`http://127.0.0.1:${await freePort()}`, 2000),
      teardown: async () => {
        await processor.close();
        customer.close();
        daemon.close();
      },
    };
  });

  describe('Monero adapter: what the contract leaves to it', () => {
    it('labels each subaddress with its invoice, and puts the amount in XMR in the payment URI', async () => {
      const processor = processorOn(local!.walletRpcUrl);
      const made = await processor.createAddress({ invoiceId: 'inv_label', amount: 1_500_000_000_000n, description: 'Relay invoice inv_label' });
      expect(made.paymentUri).toBe(`monero:${made.address}?tx_amount=1.5&tx_description=Relay%20invoice%20inv_label`);
      const wallet = createWalletRpcClient({ url: local!.walletRpcUrl });
      const found = (await wallet.call('get_address', { account_index: 0, address_index: [made.addressIndex] })) as { addresses: Array<{ address: string; label: string }> };
      expect(found.addresses[0]).toMatchObject({ address: made.address, label: 'relay invoice inv_label' });
      wallet.close();
      await processor.close();
    });

    it('tells a refused login apart from a wallet that is down: it is not worth retrying', async () => {
      const url = new URL(local!.walletRpcUrl);
      url.password = 'wrong';
      const processor = processorOn(url.toString());
      const error = await processor.listPayments([1]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentProcessorError);
      expect(error).not.toBeInstanceOf(PaymentProcessorUnavailableError);
      expect((error as Error).message).not.toContain('wrong');
      await processor.close();
    });

    it('reads its wallet height for the health check', async () => {
      const processor = processorOn(local!.walletRpcUrl);
      expect(await processor.checkHealth()).toEqual({ reachable: true, height: expect.any(Number) });
      await processor.close();
    });
  });
});
