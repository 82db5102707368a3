/**
 * Billing end to end on a private Litecoin chain (litecoind in regtest, Bitcoin Core's RPC):
 * Relay with PAYMENT_PROCESSOR=bitcoin takes LTC through the same port as Monero. An invoice paid
 * from the customer wallet goes confirming, then paid, and the payer's key gets the paid limit.
 * Under CI it runs, never skips.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decimalOfAtomic } from '../../infra/payment/bitcoin/amount.ts';
import { createBitcoinRpcClient, type BitcoinRpcClient } from '../../infra/payment/bitcoin/bitcoin-rpc-client.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startLitecoinLocal, type LitecoinLocal } from '../support/litecoin-global-setup.ts';
import { chainForSuite } from '../support/local-chain.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

describe('billing on a private Litecoin chain', () => {
  let local: LitecoinLocal | null = null;
  let skipReason = '';
  let stopChain: () => void = () => undefined;
  let relay: RelayProcess;
  let customer: BitcoinRpcClient;
  let payer: Account;

  beforeAll(async () => {
    // The chain of the run (its vitest project's globalSetup), else one started here.
    ({ local, skipReason, stop: stopChain } = chainForSuite(inject('litecoinLocal'), inject('litecoinSkipReason'), startLitecoinLocal));
    if (!local) return;
    customer = createBitcoinRpcClient({ url: local.customerRpcUrl, timeoutMs: 60_000 });
    relay = await startRelayProcess({
      env: { PAYMENT_PROCESSOR: 'bitcoin', BITCOIN_RPC_URL: local.rpcUrl, BITCOIN_NETWORK: local.network, BITCOIN_ASSET: 'LTC', BILLING_RATE: '80', PAYMENT_CONFIRMATIONS: '2', PAYMENT_WATCH_INTERVAL_MS: '200' },
    });
    payer = await createAccount(relay, 'ltc.payer@example.com');
  }, 600_000);
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    customer?.close();
    stopChain();
  }, 120_000);

  it('takes LTC through the same port: confirming once seen, paid after two blocks, and the key gets the paid limit', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const config = (await (await fetch(`${relay.url}/dashboard/api/dashboard/configuration`)).json()) as any;
    expect(config.data.assets).toEqual([{ asset: 'LTC', network: local.network, rate: '80', decimals: 8, requiredConfirmations: 2 }]);
    const appId = (await createApp(relay, payer, ['signal'], 'Litecoin bot')).appId;
    const { secret } = await createKey(relay, payer, [appId]);
    const created = await dashboard(relay, payer, 'POST', '/invoices', { asset: 'LTC', planId: 'paid-monthly' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const invoice = created.body;
    // 5.00 USD at 80 USD per LTC = 0.0625 LTC.
    expect(invoice).toMatchObject({ amount: '0.06250000', paymentUri: expect.stringMatching(/^litecoin:\w+\?amount=0\.0625/) });
    const txid = await customer.call('sendtoaddress', [invoice.address, decimalOfAtomic(6_250_000n)]);
    const statusOf = async () => (await dashboard(relay, payer, 'GET', `/invoices/${invoice.invoiceId}/payment-status`)).body;
    const confirming = await waitFor(async () => ((await statusOf()).status === 'confirming' ? statusOf() : undefined), 30_000, 'confirming');
    expect(confirming.payments).toEqual([expect.objectContaining({ txid, amount: '0.06250000', confirmations: 0 })]);
    await customer.call('generatetoaddress', [2, local.customerAddress]);
    await waitFor(async () => ((await statusOf()).status === 'paid' ? true : undefined), 30_000, 'paid');
    await waitFor(async () => {
      const sent = await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550700001', message: 'paid in LTC' }] } });
      // Every try is a send that counts: above the free limit's 600 a minute is the paid limit,
      // however many tries it took the paid tier to reach the API thread (at least 1,600 of 2,000 left).
      return Number(sent.headers.get('x-ratelimit-remaining')) > 600 ? true : undefined;
    }, 10_000, 'the paid send limit');
  });
});
