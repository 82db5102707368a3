import type { AlertCategory } from '../../domain/user/notification-preferences.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { AppsProjection, AppView } from '../../projections/apps/apps-projection.ts';
import type { InvoicesProjection, InvoiceView } from '../../projections/invoices/invoices-projection.ts';

/** What a user is told of an event: whom, in which category, in words (never a message body or a contact). */
export interface Alert {
  readonly userId: string;
  readonly category: AlertCategory;
  readonly subject: string;
  readonly text: string;
  /** The app it concerns, if any. */
  readonly appId?: string;
}

/** The events that alert someone, for the dispatcher's subscription. */
export const ALERTING = {
  categories: ['outbound', 'inbound', 'app', 'user', 'credential', 'invoice'],
  types: [
    'MessageAbandoned',
    'InboundWebhookAbandoned',
    'AppMessengerHealthChanged',
    'SessionStarted',
    'CredentialCreated',
    'CredentialDeleted',
    'InvoiceConfirming',
    'InvoicePaid',
    'InvoiceCancelled',
    'InvoiceExpired',
    'InvoicePaymentReceivedLate',
  ],
} as const;

const HEALTH: Record<string, string> = {
  ok: 'works again',
  'daemon-unreachable': 'cannot reach its messenger daemon',
  'account-missing': 'lost its account on the messenger daemon',
};

const INVOICE_NEWS: Record<string, (invoice: InvoiceView) => { subject: string; text: string }> = {
  InvoiceConfirming: (i) => ({ subject: `Payment seen for invoice ${i.invoiceId}`, text: `The payment of invoice ${i.invoiceId} (${i.planId}, ${i.price} ${i.currency}) was seen; it counts once it has ${i.requiredConfirmations} confirmations.\n` }),
  InvoicePaid: (i) => ({ subject: `Invoice ${i.invoiceId} is paid`, text: `Invoice ${i.invoiceId} (${i.planId}, ${i.price} ${i.currency}) is paid: every key of your account has the paid send limit for the plan's period.\n` }),
  InvoiceCancelled: (i) => ({ subject: `Invoice ${i.invoiceId} was cancelled`, text: `Invoice ${i.invoiceId} (${i.planId}) was cancelled. A payment to its address from now on is not counted: ask the operator for a refund.\n` }),
  InvoiceExpired: (i) => ({ subject: `Invoice ${i.invoiceId} expired`, text: `Invoice ${i.invoiceId} (${i.planId}) expired before it was paid in full${BigInt(i.totalReceived) > 0n ? '; what it received is to be refunded by the operator' : ''}.\n` }),
  InvoicePaymentReceivedLate: (i) => ({ subject: `A late payment to invoice ${i.invoiceId}`, text: `A payment reached invoice ${i.invoiceId} after it was ${i.status}: it is not counted, and is to be refunded by the operator.\n` }),
};

/**
 * The alert an event makes, if any: its owner is found through the apps read model (an app
 * deleted since alerts nobody) or the invoices one.
 */
export const alertFor = (event: RecordedEvent, apps: Pick<AppsProjection, 'app'>, invoices: Pick<InvoicesProjection, 'invoice'>): Alert | undefined => {
  const data = event.data as Record<string, unknown>;
  const at = event.recordedAt.toISOString();
  /** An alert about the app the event names, to its owner, in `words` of it; none when the app is gone. */
  const aboutApp = (category: AlertCategory, words: (app: AppView) => { subject: string; text: string }): Alert | undefined => {
    const app = typeof data.appId === 'string' ? apps.app(data.appId) : undefined;
    if (!app) return undefined;
    return { userId: app.userId, appId: app.id, category, ...words(app) };
  };
  switch (event.type) {
    case 'MessageAbandoned':
      return aboutApp('message-abandoned', (app) => ({
        subject: `Relay gave up on a message of ${app.settings.name}`,
        text: `Relay gave up on message ${String(data.messageId)} of the app "${app.settings.name}" (${app.id}) on ${String(data.messenger)} after ${String(data.attempts)} attempts (${at}).\nThe last reason: ${String(data.reason)}\n`,
      }));
    case 'InboundWebhookAbandoned':
      return aboutApp('message-abandoned', (app) => ({
        subject: `The webhook of ${app.settings.name} did not take a message`,
        text: `The webhook of the app "${app.settings.name}" (${app.id}) did not take the inbound message ${String(data.messageId)} after ${String(data.attempts)} attempts, so Relay gave it up (${at}).\nThe last reason: ${String(data.reason)}\n`,
      }));
    case 'AppMessengerHealthChanged':
      return aboutApp('messenger-health', (app) => {
        const messenger = app.messengers.find((m) => m.id === data.appMessengerId)?.messenger ?? 'a messenger';
        const state = HEALTH[String(data.health)] ?? String(data.health);
        return {
          subject: `The ${messenger} bot of ${app.settings.name} ${state}`,
          text: `The ${messenger} bot of the app "${app.settings.name}" (${app.id}) ${state} (${at}).${data.reason ? `\n${String(data.reason)}` : ''}\n`,
        };
      });
    case 'SessionStarted':
      return {
        userId: String(data.userId),
        category: 'sign-in',
        subject: 'New sign-in to your Relay account',
        text: `Someone signed in to your Relay account at ${String(data.startedAt)}. If it was not you, end the session (GET /dashboard/auth/sessions, DELETE /dashboard/auth/sessions/<id>) and sign in again.\n`,
      };
    case 'CredentialCreated':
    case 'CredentialDeleted': {
      const created = event.type === 'CredentialCreated';
      return {
        userId: String(data.userId),
        category: 'credentials',
        subject: created ? `A credential was created: ${String(data.name)}` : 'A credential was deleted',
        text: created
          ? `The ${String(data.type)} credential "${String(data.name)}" (${String(data.credentialId)}, ${String(data.keyPreview)}) was created at ${at}.\n`
          : `The credential ${String(data.credentialId)} was deleted at ${at}; its key no longer works.\n`,
      };
    }
    default: {
      const news = INVOICE_NEWS[event.type];
      const invoice = news && typeof data.invoiceId === 'string' ? invoices.invoice(data.invoiceId) : undefined;
      if (!news || !invoice) return undefined;
      return { userId: invoice.userId, category: 'invoices', ...news(invoice) };
    }
  }
};
