/**
 * Billing end to end on the payment simulator (`relay simulate pay|confirm|blocks`), through the
 * dashboard layer: the configuration without a cookie, invoices created, paid, underpaid, paid
 * late, cancelled, expired, a reorganisation, a restart between payment and confirmation, the
 * paid send limit on every key of the payer, and foreign invoices refused. The same flows run on
 * a real private Monero chain in billing-monero.e2e.spec.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox, type SmtpInbox } from '../support/smtp-inbox.ts';

const BILLING_ENV = {
  PAYMENT_PROCESSOR: 'simulator',
  BILLING_RATE: '150',
  BILLING_CURRENCY: 'EUR',
  BILLING_PAID_MONTHLY_PRICE: '5',
  BILLING_ANNUAL_DISCOUNT_PERCENT: '20',
  PAYMENT_CONFIRMATIONS: '2',
  PAYMENT_WATCH_INTERVAL_MS: '100',
  INVOICE_TTL_SECONDS: '3600',
};

describe('billing on the payment simulator', () => {
  let relay: RelayProcess;
  let smtp: SmtpInbox;
  let payer: Account;
  let keys: string[];
  let appId: string;

  const start = (dataDir?: string, env: Record<string, string> = {}) => startRelayProcess({ ...(dataDir ? { dataDir } : {}), env: { ...BILLING_ENV, SMTP_URL: smtp.url, ...env } });
  const cli = async (args: string[]) => {
    const result = await relay.cli(args);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout.trim()) as any;
  };
  const createInvoice = async (account: Account, planId = 'paid-monthly') => {
    const created = await dashboard(relay, account, 'POST', '/invoices', { asset: 'XMR', planId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return created.body;
  };
  const statusOf = async (invoiceId: string, account = payer) => (await dashboard(relay, account, 'GET', `/invoices/${invoiceId}/payment-status`)).body;
  const until = (invoiceId: string, status: string, account = payer) =>
    waitFor(async () => {
      const current = await statusOf(invoiceId, account);
      return current.status === status ? current : undefined;
    }, 15_000, `invoice ${invoiceId} ${status}`);
  /** What is left of the send budget after one message: 599 on the free tier, 1999 on the paid one. */
  const remainingAfterSend = async (key: string) => {
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550500001', message: 'hi' }] } });
    expect(sent.status).toBe(202);
    return Number(sent.headers.get('x-ratelimit-remaining'));
  };

  beforeAll(async () => {
    smtp = await startSmtpInbox();
    relay = await start();
    payer = await createAccount(relay, 'payer@example.com');
    appId = (await createApp(relay, payer, ['signal'], 'Paying bot')).appId;
    keys = [(await createKey(relay, payer, [appId])).secret, (await createKey(relay, payer, [appId])).secret];
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await smtp?.close();
  });

  it('shows the plans and the asset without a cookie, and refuses the other billing routes without one', async () => {
    const res = await fetch(`${relay.url}/dashboard/api/dashboard/configuration`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      success: true,
      data: {
        currency: 'EUR',
        annualDiscountPercent: 20,
        assets: [{ asset: 'XMR', network: 'simulated', rate: '150', decimals: 12, requiredConfirmations: 2 }],
        plans: [
          { id: 'free', tier: 'free', period: null, price: '0.00', sendPerMinute: 600, pollPerMinute: 100 },
          { id: 'paid-monthly', tier: 'paid', period: 'monthly', price: '5.00', sendPerMinute: 2000, pollPerMinute: 100 },
          { id: 'paid-annual', tier: 'paid', period: 'annual', price: '48.00', sendPerMinute: 2000, pollPerMinute: 100 },
        ],
        invoiceExpiresInSeconds: 3600,
      },
    });
    for (const [method, path] of [['GET', '/invoices'], ['POST', '/invoices'], ['GET', '/invoices/inv_0'], ['GET', '/invoices/inv_0/payment-status'], ['POST', '/invoices/inv_0/cancel']] as const) {
      const refused = await fetch(`${relay.url}/dashboard/api/dashboard${path}`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{}' } : {}) });
      expect([path, refused.status, await refused.json()]).toEqual([path, 400, { success: false, error: 'Session token is required' }]);
    }
  });

  it('refuses a bad invoice request in the interface words', async () => {
    const bad = async (body: unknown) => dashboard(relay, payer, 'POST', '/invoices', body);
    expect(await bad({ planId: 'paid-monthly' })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: asset' } });
    expect(await bad({ asset: 'XMR' })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: planId' } });
    expect(await bad({ asset: 'BTC', planId: 'paid-monthly' })).toEqual({ status: 400, body: { success: false, error: 'Unsupported asset' } });
    expect(await bad({ asset: 'XMR', planId: 'free' })).toEqual({ status: 400, body: { success: false, error: 'Unknown plan' } });
  });

  it('moves an invoice pending → confirming → paid, and gives every key of the payer the paid limit at once', async () => {
    expect(await remainingAfterSend(keys[0]!)).toBe(599);
    const invoice = await createInvoice(payer);
    expect(invoice).toMatchObject({
      invoiceId: expect.stringMatching(/^inv_[0-9a-f]{24}$/),
      status: 'pending',
      additionalStatus: 'None',
      planId: 'paid-monthly',
      period: 'monthly',
      price: '5.00',
      currency: 'EUR',
      asset: 'XMR',
      network: 'simulated',
      // 5.00 EUR at 150 EUR per XMR, rounded up to the piconero.
      amount: '0.033333333334',
      address: expect.any(String),
      paymentUri: expect.stringMatching(/^relay-simulator:.+\?amount=33333333334/),
      requiredConfirmations: 2,
      totalReceived: '0.000000000000',
      paidAt: null,
    });
    expect((await dashboard(relay, payer, 'GET', `/invoices/${invoice.invoiceId}`)).body).toEqual(invoice);
    expect((await dashboard(relay, payer, 'GET', '/invoices')).body.items.map((i: any) => i.invoiceId)).toContain(invoice.invoiceId);

    const payment = await cli(['simulate', 'pay', '--invoice', invoice.invoiceId]);
    const confirming = await until(invoice.invoiceId, 'confirming');
    expect(confirming).toMatchObject({ totalReceived: '0.033333333334', amountDue: '0.000000000000', payments: [{ txid: payment.txid, amount: '0.033333333334', confirmations: 0, late: false }] });
    await cli(['simulate', 'blocks', '--count', '2']);
    const paid = await until(invoice.invoiceId, 'paid');
    expect(paid).toMatchObject({ additionalStatus: 'None', paidAt: expect.any(String), payments: [{ confirmations: 2 }] });
    await waitFor(async () => ((await remainingAfterSend(keys[1]!)) === 1998 ? true : undefined), 30_000, 'the paid limit on the second key'); // the subscription keeper's turn and the API thread's read model: seconds on a busy 2-core machine
    const { subscription } = (await dashboard(relay, payer, 'GET', '/invoices')).body;
    expect(subscription.tier).toBe('paid');
    // 30 days from the payment.
    expect(Date.parse(subscription.paidUntil) - Date.parse(paid.paidAt)).toBe(30 * 86_400_000);
    const cancel = await dashboard(relay, payer, 'POST', `/invoices/${invoice.invoiceId}/cancel`);
    expect(cancel).toEqual({ status: 400, body: { success: false, error: 'Invoice is paid and cannot be cancelled' } });
    // The owner is told (category invoices, on by default for e-mail).
    const mail = await smtp.next('payer@example.com', { matches: (m) => m.subject === `Invoice ${invoice.invoiceId} is paid` });
    expect(mail.text).toContain('every key of your account has the paid send limit');
  });

  it('keeps an underpaid invoice pending until the rest arrives', async () => {
    const invoice = await createInvoice(payer, 'paid-annual');
    expect(invoice.amount).toBe('0.320000000000');
    await cli(['simulate', 'pay', '--invoice', invoice.invoiceId, '--amount', '0.3', '--confirmations', '2']);
    const partial = await waitFor(async () => {
      const current = await statusOf(invoice.invoiceId);
      return current.payments.length === 1 ? current : undefined;
    }, 10_000, 'the partial payment');
    expect(partial).toMatchObject({ status: 'pending', additionalStatus: 'PaidPartial', totalReceived: '0.300000000000', amountDue: '0.020000000000' });
    await cli(['simulate', 'pay', '--invoice', invoice.invoiceId, '--amount', '0.03', '--confirmations', '2']);
    const paid = await until(invoice.invoiceId, 'paid');
    expect(paid).toMatchObject({ additionalStatus: 'PaidOver', totalReceived: '0.330000000000', overpaidBy: '0.010000000000' });
  });

  it('cancels a pending invoice, records a payment after that as late, and refuses a confirming one', async () => {
    const invoice = await createInvoice(payer);
    const cancelled = await dashboard(relay, payer, 'POST', `/invoices/${invoice.invoiceId}/cancel`);
    expect(cancelled).toMatchObject({ status: 200, body: { success: true, data: { invoiceId: invoice.invoiceId, status: 'cancelled', cancelledAt: expect.any(String) } } });
    await cli(['simulate', 'pay', '--invoice', invoice.invoiceId, '--confirmations', '2']);
    const late = await waitFor(async () => {
      const current = await statusOf(invoice.invoiceId);
      return current.payments.length === 1 ? current : undefined;
    }, 10_000, 'the late payment');
    expect(late).toMatchObject({ status: 'cancelled', additionalStatus: 'PaidLate', lateReceived: '0.033333333334', totalReceived: '0.000000000000', payments: [{ late: true }] });

    const confirming = await createInvoice(payer);
    await cli(['simulate', 'pay', '--invoice', confirming.invoiceId]);
    await until(confirming.invoiceId, 'confirming');
    expect(await dashboard(relay, payer, 'POST', `/invoices/${confirming.invoiceId}/cancel`)).toEqual({ status: 400, body: { success: false, error: 'Invoice payment is being confirmed and cannot be cancelled' } });
  });

  it('follows a reorganisation: fewer confirmations are recorded, and the invoice is paid once they are back', async () => {
    const invoice = await createInvoice(payer);
    const payment = await cli(['simulate', 'pay', '--invoice', invoice.invoiceId, '--confirmations', '1']);
    await waitFor(async () => ((await statusOf(invoice.invoiceId)).payments[0]?.confirmations === 1 ? true : undefined), 10_000, 'one confirmation');
    await cli(['simulate', 'confirm', '--txid', payment.txid, '--confirmations', '0']);
    const back = await waitFor(async () => {
      const current = await statusOf(invoice.invoiceId);
      return current.payments[0]?.confirmations === 0 ? current : undefined;
    }, 10_000, 'the reorganisation');
    expect(back.status).toBe('confirming');
    await cli(['simulate', 'confirm', '--txid', payment.txid, '--confirmations', '2']);
    await until(invoice.invoiceId, 'paid');
    const events = (await relay.cli(['events', '--stream', `invoice-${invoice.invoiceId}`])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e: any) => [e.type, e.data.confirmations ?? null])).toEqual([
      ['InvoiceCreated', null],
      ['InvoicePaymentSeen', 1],
      ['InvoiceConfirming', null],
      ['InvoicePaymentUpdated', 0],
      ['InvoicePaymentUpdated', 2],
      ['InvoicePaid', null],
    ]);
  });

  it("refuses another user's invoice like an unknown one", async () => {
    const invoice = await createInvoice(payer);
    const other = await createAccount(relay, 'other.payer@example.com');
    for (const [method, path] of [['GET', `/invoices/${invoice.invoiceId}`], ['GET', `/invoices/${invoice.invoiceId}/payment-status`], ['POST', `/invoices/${invoice.invoiceId}/cancel`]] as const)
      expect(await dashboard(relay, other, method, path)).toEqual({ status: 400, body: { success: false, error: 'Invoice not found' } });
    expect((await dashboard(relay, other, 'GET', '/invoices')).body).toEqual({ items: [], subscription: { tier: 'free', paidUntil: null } });
  });

  it('sees a payment made while Relay was down, and its confirmations after the restart', async () => {
    const invoice = await createInvoice(payer);
    await relay.stop();
    await cli(['simulate', 'pay', '--invoice', invoice.invoiceId, '--confirmations', '1']);
    relay = await start(relay.dataDir);
    await until(invoice.invoiceId, 'confirming');
    await relay.stop();
    await cli(['simulate', 'blocks', '--count', '1']);
    relay = await start(relay.dataDir);
    const paid = await until(invoice.invoiceId, 'paid');
    expect(paid.payments).toHaveLength(1);
  });

  it('expires an invoice nobody paid in time', async () => {
    await relay.stop();
    relay = await start(relay.dataDir, { INVOICE_TTL_SECONDS: '1' });
    const invoice = await createInvoice(payer);
    const expired = await until(invoice.invoiceId, 'expired');
    expect(expired).toMatchObject({ status: 'expired', totalReceived: '0.000000000000' });
    expect(await dashboard(relay, payer, 'POST', `/invoices/${invoice.invoiceId}/cancel`)).toEqual({ status: 400, body: { success: false, error: 'Invoice has expired and cannot be cancelled' } });
  });
});
