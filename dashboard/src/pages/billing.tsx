/**
 * The paid plan: the operator's plans and assets, the user's invoices, a new one (QR code of its
 * payment URI, the URI as a wallet link with a copy button) watched from pending to paid. The
 * paid plan is offered only while the user is not on it.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import { CopyButton, ErrorNote, Loading, Qr, when } from '../ui';

type Config = { currency: string; assets: Array<{ asset: string; network: string; rate: string; requiredConfirmations: number }>; plans: Array<{ id: 'free' | 'paid-monthly' | 'paid-annual'; tier: string; period: string | null; price: string; sendPerMinute: number }> };
type Invoices = Awaited<ReturnType<typeof listInvoices>>;
const listInvoices = async () => run(api.GET('/dashboard/api/dashboard/invoices'));
type Invoice = Extract<Invoices, { ok: true }>['data']['items'][number];

const STATUS: Record<Invoice['status'], string> = {
  pending: 'waiting for the payment',
  confirming: 'paid, waiting for confirmations',
  paid: 'paid',
  cancelled: 'cancelled',
  expired: 'expired',
};

const PLANS: Record<string, string> = { free: 'Free', paid: 'Paid', 'paid-monthly': 'Paid, monthly', 'paid-annual': 'Paid, yearly' };
/** A plan or tier in words: `paid-monthly` → "Paid, monthly" (an unknown one spelt out the same way). */
const planName = (id: string) => PLANS[id] ?? id.split('-').map((word, i) => (i === 0 ? word.charAt(0).toUpperCase() + word.slice(1) : word)).join(', ');

export const Billing = (props: { onFailure: (failure: Failure) => void }) => {
  const [config, setConfig] = useState<Config | null | undefined>();
  const [invoices, setInvoices] = useState<Invoice[] | undefined>();
  const [subscription, setSubscription] = useState<{ tier: string; paidUntil: string | null } | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [choice, setChoice] = useState({ planId: 'paid-monthly' as 'paid-monthly' | 'paid-annual', asset: '' });

  const load = async () => {
    setFailure(undefined);
    const [c, i] = await Promise.all([run(api.GET('/dashboard/api/dashboard/configuration')), listInvoices()]);
    if (c.ok) {
      setConfig(c.data.data);
      if (!choice.asset && c.data.data.assets[0]) setChoice({ ...choice, asset: c.data.data.assets[0].asset });
    } else if (c.failure.message.includes('not') || !c.failure.retry) setConfig(null);
    if (!i.ok) return (i.failure.signedOut ? props.onFailure : setFailure)(i.failure);
    setInvoices(i.data.items);
    setSubscription(i.data.subscription);
  };
  useEffect(() => void load(), []);

  // An open invoice is watched until it is final.
  const open = invoices?.some((inv) => inv.status === 'pending' || inv.status === 'confirming');
  useEffect(() => {
    if (!open) return;
    const timer = setInterval(() => void load(), 3000);
    return () => clearInterval(timer);
  }, [open]);

  const buy = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/api/dashboard/invoices', { body: choice }));
    if (!outcome.ok) return setFailure(outcome.failure);
    await load();
  };

  const cancel = async (invoice: Invoice) => {
    const outcome = await run(api.POST('/dashboard/api/dashboard/invoices/{invoiceId}/cancel', { params: { path: { invoiceId: invoice.invoiceId } } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    await load();
  };

  if (invoices === undefined) return failure ? <ErrorNote failure={failure} onRetry={load} /> : <Loading />;
  const paidPlans = config?.plans.filter((p) => p.tier === 'paid') ?? [];
  // On the paid plan (or paid time still running), there is nothing to buy until it ends.
  const paying = subscription !== undefined && (subscription.tier === 'paid' || (subscription.paidUntil !== null && new Date(subscription.paidUntil).getTime() > Date.now()));

  return (
    <section aria-labelledby="billing">
      <h1 id="billing">Billing</h1>
      <ErrorNote failure={failure} onRetry={load} />
      {subscription && (
        <p data-tier>
          Your plan: <strong>{planName(subscription.tier)}</strong>
          {subscription.paidUntil ? `, paid until ${when(subscription.paidUntil)}` : ''}.
        </p>
      )}
      {config === null || (config && config.assets.length === 0) ? (
        <p class="note">This Relay takes no payments: its operator has not set up billing.</p>
      ) : paying ? (
        <p class="note" data-paying>
          You are on the paid plan{subscription?.paidUntil ? ` until ${when(subscription.paidUntil)}` : ''}: nothing to buy until it ends.
        </p>
      ) : config ? (
        <form onSubmit={buy}>
          <h2>Buy the paid plan</h2>
          <fieldset>
            <legend>Plan</legend>
            {paidPlans.map((plan) => (
              <label key={plan.id} class="inline">
                <input type="radio" name="plan" value={plan.id} checked={choice.planId === plan.id} onChange={() => setChoice({ ...choice, planId: plan.id as 'paid-monthly' | 'paid-annual' })} /> {planName(plan.id)}:{' '}
                {plan.price} {config.currency} ({plan.sendPerMinute} messages a minute)
              </label>
            ))}
          </fieldset>
          <label for="asset">Pay with</label>
          <select id="asset" value={choice.asset} onChange={(e) => setChoice({ ...choice, asset: (e.target as HTMLSelectElement).value })}>
            {config.assets.map((a) => (
              <option key={a.asset} value={a.asset}>
                {a.asset} ({a.network})
              </option>
            ))}
          </select>
          <button type="submit">Make an invoice</button>
        </form>
      ) : null}
      <h2>Invoices</h2>
      {invoices.length === 0 ? (
        <p>No invoices yet.</p>
      ) : (
        <ul class="cards" data-invoices>
          {invoices.map((inv) => (
            <li key={inv.invoiceId} data-invoice={inv.invoiceId}>
              <p>
                {planName(inv.planId)}: {inv.price} {inv.currency} = <strong>{inv.amount} {inv.asset}</strong> — <span data-status={inv.status}>{STATUS[inv.status]}</span>
                {inv.status === 'confirming' ? ` (${inv.requiredConfirmations} confirmations needed)` : ''}
              </p>
              {inv.status === 'pending' && (
                <>
                  <Qr text={inv.paymentUri} label={`QR code to pay ${inv.amount} ${inv.asset}`} />
                  <p>
                    <a href={inv.paymentUri} data-wallet-link>
                      Pay with a wallet app on this device
                    </a>{' '}
                    <CopyButton text={inv.paymentUri} label="Copy the payment URI" />
                  </p>
                  <p class="muted">Pay before {when(inv.expiresAt)}.</p>
                  <button type="button" onClick={() => cancel(inv)}>
                    Cancel this invoice
                  </button>
                </>
              )}
              {inv.paidAt && <p class="muted">Paid {when(inv.paidAt)}</p>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
};
