/**
 * Billing end to end on a real private Monero chain (scripts/monero-local.sh: monerod in regtest,
 * the merchant's watch-only wallet that Relay reads, a customer wallet that pays), through the
 * dashboard API: an invoice paid from the customer's wallet goes confirming then paid and gives
 * the payer's keys the paid limit; an underpayment; a payment after cancel; a restart between
 * payment and confirmation; a reorganisation; an expiry. Under CI it runs, never skips.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createWalletRpcClient, type WalletRpcClient } from '../../infra/payment/monero/wallet-rpc-client.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startMoneroLocal, type MoneroLocal } from '../support/monero-global-setup.ts';
import { chainForSuite } from '../support/local-chain.ts';
import { daemonPost, moneroCustomer, type MoneroCustomer } from '../support/monero-customer.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const CONFIRMATIONS = 3;

describe('billing on a private Monero chain', () => {
  let local: MoneroLocal | null = null;
  let skipReason = '';
  let stopChain: () => void = () => undefined;
  let relay: RelayProcess;
  let payer: Account;
  let keys: string[];
  let appId: string;
  let customer: WalletRpcClient;
  let daemon: WalletRpcClient;

  const start = (dataDir?: string, env: Record<string, string> = {}) =>
    startRelayProcess({
      ...(dataDir ? { dataDir } : {}),
      env: {
        PAYMENT_PROCESSOR: 'monero',
        MONERO_WALLET_RPC_URL: local!.walletRpcUrl,
        MONERO_NETWORK: local!.network,
        BILLING_RATE: '150',
        PAYMENT_CONFIRMATIONS: String(CONFIRMATIONS),
        PAYMENT_WATCH_INTERVAL_MS: '200',
        ...env,
      },
    });
  let paying: MoneroCustomer;
  const mine = (blocks: number) => paying.mine(blocks);
  /** The customer pays `amount` piconero to the invoice's address; the transaction id, once a block would take it. */
  const pay = (address: string, amount: bigint) => paying.pay(address, amount);
  const piconero = (xmr: string) => BigInt(xmr.replace('.', ''));
  const createInvoice = async () => {
    const created = await dashboard(relay, payer, 'POST', '/invoices', { asset: 'XMR', planId: 'paid-monthly' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return created.body as { invoiceId: string; address: string; amount: string; paymentUri: string };
  };
  const statusOf = async (invoiceId: string) => (await dashboard(relay, payer, 'GET', `/invoices/${invoiceId}/payment-status`)).body;
  const until = (invoiceId: string, check: (status: any) => boolean, what: string) =>
    waitFor(async () => {
      const current = await statusOf(invoiceId);
      return check(current) ? current : undefined;
    }, 60_000, `invoice ${invoiceId}: ${what}`);

  beforeAll(async () => {
    // The chain of the run (its vitest project's globalSetup), else one started here.
    ({ local, skipReason, stop: stopChain } = chainForSuite(inject('moneroLocal'), inject('moneroSkipReason'), startMoneroLocal));
    if (!local) return;
    customer = createWalletRpcClient({ url: local.customerWalletRpcUrl, timeoutMs: 30_000 });
    daemon = createWalletRpcClient({ url: local.daemonRpcUrl, timeoutMs: 60_000 });
    paying = moneroCustomer({ customer, daemon, daemonRpcUrl: local.daemonRpcUrl, customerAddress: local.customerAddress });
    // Whatever an earlier suite left in the pool is mined, so that each block holds only this suite's payments.
    await paying.mineAnyway(1);
    relay = await start();
    payer = await createAccount(relay, 'monero.payer@example.com');
    appId = (await createApp(relay, payer, ['signal'], 'Monero bot')).appId;
    keys = [(await createKey(relay, payer, [appId])).secret, (await createKey(relay, payer, [appId])).secret];
  }, 600_000);
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    customer?.close();
    daemon?.close();
    stopChain();
  }, 120_000);

  it('offers XMR on the regtest network', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const config = (await (await fetch(`${relay.url}/dashboard/api/dashboard/configuration`)).json()) as any;
    expect(config.data.assets).toEqual([{ asset: 'XMR', network: 'regtest', rate: '150', decimals: 12, requiredConfirmations: CONFIRMATIONS }]);
  });

  it('is paid from the customer wallet: confirming once seen, paid after the confirmations, and every key gets the paid limit', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const invoice = await createInvoice();
    expect(invoice).toMatchObject({ amount: '0.033333333334', paymentUri: expect.stringMatching(/^monero:[0-9A-Za-z]+\?tx_amount=0\.033333333334/) });
    const txid = await pay(invoice.address, piconero(invoice.amount));
    const confirming = await until(invoice.invoiceId, (s) => s.status === 'confirming', 'confirming');
    expect(confirming.payments).toEqual([expect.objectContaining({ txid, amount: '0.033333333334', late: false })]);
    await mine(CONFIRMATIONS);
    const paid = await until(invoice.invoiceId, (s) => s.status === 'paid', 'paid');
    expect(paid).toMatchObject({ additionalStatus: 'None', totalReceived: '0.033333333334', paidAt: expect.any(String) });
    for (const key of keys) {
      await waitFor(async () => {
        const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550600001', message: 'paid' }] } });
        // Every try is a send that counts: above the free limit's 600 a minute is the paid limit,
        // however many tries it took the paid tier to reach the API thread (at least 1,600 of 2,000 left).
        return Number(sent.headers.get('x-ratelimit-remaining')) > 600 ? true : undefined;
      }, 10_000, 'the paid send limit');
    }
  });

  it('keeps an underpaid invoice pending with what it received', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const invoice = await createInvoice();
    await pay(invoice.address, piconero(invoice.amount) / 2n);
    // Seen by Relay in the pool before the blocks are mined, as the paid test does.
    await until(invoice.invoiceId, (s) => s.payments.length === 1, 'the partial payment seen');
    await mine(CONFIRMATIONS);
    const partial = await until(invoice.invoiceId, (s) => s.payments[0]?.confirmations >= CONFIRMATIONS, 'the partial payment confirmed');
    expect(partial).toMatchObject({ status: 'pending', additionalStatus: 'PaidPartial', totalReceived: '0.016666666667' });
  });

  it('records a payment after cancel as late, for a refund', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const invoice = await createInvoice();
    expect((await dashboard(relay, payer, 'POST', `/invoices/${invoice.invoiceId}/cancel`)).status).toBe(200);
    await pay(invoice.address, piconero(invoice.amount));
    await mine(1);
    const late = await until(invoice.invoiceId, (s) => s.payments.length === 1, 'the late payment');
    expect(late).toMatchObject({ status: 'cancelled', additionalStatus: 'PaidLate', lateReceived: '0.033333333334', payments: [{ late: true }] });
  });

  it('follows a reorganisation that takes confirmations away, and is paid once they are back', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const invoice = await createInvoice();
    await pay(invoice.address, piconero(invoice.amount));
    await mine(CONFIRMATIONS - 1);
    await until(invoice.invoiceId, (s) => s.payments[0]?.confirmations === CONFIRMATIONS - 1, `${CONFIRMATIONS - 1} confirmations`);
    // Two blocks taken back, one mined: the transaction is in the new block, with one confirmation.
    await daemonPost(local!.daemonRpcUrl, '/pop_blocks', { nblocks: CONFIRMATIONS - 1 });
    await mine(1);
    const reorganised = await until(invoice.invoiceId, (s) => s.payments[0]?.confirmations === 1, 'the confirmations taken away');
    expect(reorganised.status).toBe('confirming');
    await mine(CONFIRMATIONS);
    await until(invoice.invoiceId, (s) => s.status === 'paid', 'paid after the reorganisation');
    const events = (await relay.cli(['events', '--stream', `invoice-${invoice.invoiceId}`, '--type', 'InvoicePaymentUpdated'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.some((e: any) => e.data.confirmations < e.data.previousConfirmations)).toBe(true);
  });

  it('sees the confirmations of a payment made before a restart', async ({ skip }) => {
    if (!local) return skip(skipReason);
    const invoice = await createInvoice();
    await pay(invoice.address, piconero(invoice.amount));
    await until(invoice.invoiceId, (s) => s.status === 'confirming', 'confirming');
    await relay.stop();
    await mine(CONFIRMATIONS);
    relay = await start(relay.dataDir);
    const paid = await until(invoice.invoiceId, (s) => s.status === 'paid', 'paid after the restart');
    expect(paid.payments).toHaveLength(1);
  });

  it('expires an invoice nobody paid in time', async ({ skip }) => {
    if (!local) return skip(skipReason);
    await relay.stop();
    relay = await start(relay.dataDir, { INVOICE_TTL_SECONDS: '1' });
    const invoice = await createInvoice();
    const expired = await until(invoice.invoiceId, (s) => s.status === 'expired', 'expired');
    expect(expired.totalReceived).toBe('0.000000000000');
  });
});
