import type { Logger } from 'pino';
import { alertDecider, alertStreamName, type AlertOutcome } from '../../domain/alert/decider.ts';
import { isMessenger } from '../../domain/shared/messengers.ts';
import { ALERT_CHANNELS, type AlertChannel } from '../../domain/user/notification-preferences.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import type { Mailer } from '../../infra/mail/mailer.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { UsersProjection, UserView } from '../../projections/users/users-projection.ts';
import type { InvoicesProjection } from '../../projections/invoices/invoices-projection.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';
import { openContact } from '../commands/contact-seal.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { ALERTING, alertFor, type Alert } from './alerts.ts';
import type { MessengerAlertSender } from './messenger-alert-sender.ts';
import { checkpoints } from '../services/topology.ts';

export interface AlertDispatcherDeps {
  readonly store: EventStore;
  readonly sealer: MessageSealer;
  readonly apps: AppsProjection;
  readonly users: UsersProjection;
  readonly invoices: InvoicesProjection;
  /** E-mail (`SMTP_URL`); without it nothing is mailed. */
  readonly mailer?: Mailer | undefined;
  /** The notification app's bots (`NOTIFICATION_APP_ID`); without it nothing goes to messenger contacts. */
  readonly messengers?: MessengerAlertSender | undefined;
  readonly log: Logger;
  /** Brings the read models up to the events at hand (the owner of a new invoice or app). */
  readonly catchUp?: () => Promise<void>;
  /** Pauses between the tries of an alert the mail server, the store or the broker did not take. */
  readonly retryDelaysMs?: readonly number[];
  /** At most this many alerts of one category to one user per hour; more are left out (and logged). */
  readonly perHour?: number;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Tells users what happened to their apps and account, as their notification preferences say:
 * follows the events that alert (a message given up on, a bot's daemon down or back, a sign-in, a
 * credential made or deleted) behind the events themselves, so an alert never holds up what caused
 * it, and sends it on every channel the user turned on for its category: by mail, and to each
 * messenger contact they linked through the operator's notification app. Each alert is an event on
 * `alert-<eventId>` (`AlertSent`, or `AlertFailed` after three tries), recorded once per channel.
 */
export const startAlertDispatcher = async (deps: AlertDispatcherDeps): Promise<CheckpointedSubscription> => {
  const log = deps.log.child({ component: 'alerts' });
  const retryDelays = deps.retryDelaysMs ?? [1000, 5000];
  const limiter = new RateLimiter(3_600_000, 600_000);

  /** Whether an alert can go out on a channel at all (configured, and a contact to send to). */
  const reachable = (channel: AlertChannel, alert: Alert): boolean => {
    if (channel === 'email') return deps.mailer !== undefined;
    // The notification app's own messages given up on would alert through that same app: by mail only.
    if (!deps.messengers || alert.appId === deps.messengers.appId) return false;
    return deps.users.contactsOf(alert.userId).some((c) => c.messenger === channel);
  };

  const sendOn = async (channel: AlertChannel, alert: Alert, user: UserView): Promise<AlertOutcome> => {
    if (channel === 'email') {
      await deps.mailer!.send({ to: user.email, subject: alert.subject, text: alert.text });
      return { sent: true, subject: alert.subject };
    }
    const messageIds: string[] = [];
    for (const contact of deps.users.contactsOf(alert.userId)) {
      if (contact.messenger !== channel || !isMessenger(channel)) continue;
      const contactId = await openContact(deps.store.keys, deps.sealer, contact);
      if (contactId === undefined) continue;
      const sent = await deps.messengers!.send(channel, contactId, `${alert.subject}\n\n${alert.text}`);
      if (!sent.sent) return sent;
      messageIds.push(sent.messageId);
    }
    return messageIds.length > 0 ? { sent: true, subject: alert.subject, messageIds } : { sent: false, reason: `No linked ${channel} contact` };
  };

  /** Sends, trying again while the backend is unavailable (a mail server, the store, the broker). */
  const withRetries = async (channel: AlertChannel, alert: Alert, user: UserView): Promise<AlertOutcome> => {
    for (let tryNumber = 0; ; tryNumber++) {
      try {
        return await sendOn(channel, alert, user);
      } catch (error) {
        if (!isUnavailable(error) || tryNumber >= retryDelays.length) return { sent: false, reason: isUnavailable(error) ? error.message : `The alert could not be sent on ${channel}` };
        await wait(retryDelays[tryNumber]!);
      }
    }
  };

  const alert = async (event: RecordedEvent) => {
    const found = alertFor(event, deps.apps, deps.invoices);
    if (!found) return;
    const user = deps.users.user(found.userId);
    if (!user) return;
    const preferences = deps.users.preferencesOf(found.userId);
    const wanted = ALERT_CHANNELS.filter((channel) => preferences[channel][found.category] && reachable(channel, found));
    if (wanted.length === 0) return;
    const recorded = new Set((await deps.store.readStream(alertStreamName(event.id))).events.map((e) => (e.data as { channel?: string }).channel));
    const channels = wanted.filter((channel) => !recorded.has(channel));
    if (channels.length === 0) return;
    if (!limiter.consume(`${found.userId}:${found.category}`, 1, deps.perHour ?? 20).allowed) {
      log.warn({ userId: found.userId, category: found.category }, 'alert left out: too many of this category this hour');
      return;
    }
    for (const channel of channels) {
      const outcome = await withRetries(channel, found, user);
      await handleCommand(
        deps.store,
        alertStreamName(event.id),
        alertDecider,
        { type: 'RecordAlert', data: { causationId: event.id, userId: found.userId, category: found.category, channel, outcome, now: new Date() } },
        { actor: 'system:alerts', causationId: event.id },
      );
      if (!outcome.sent) log.warn({ userId: found.userId, category: found.category, channel, reason: outcome.reason }, 'alert not sent');
    }
  };

  // A first start alerts from now on, not for the whole history before it.
  if ((await deps.store.readCheckpoint(checkpoints.alertDispatcher)) === undefined) await deps.store.storeCheckpoint(checkpoints.alertDispatcher, await deps.store.headPosition());
  const subscription = await startCheckpointedSubscription(deps.store, {
    name: checkpoints.alertDispatcher,
    filter: { categories: [...ALERTING.categories], types: [...ALERTING.types] },
    log,
    batchSize: 20,
    handler: async (events) => {
      await deps.catchUp?.();
      for (const event of events) await alert(event);
    },
  });
  return {
    catchUp: () => subscription.catchUp(),
    stop: async () => {
      await subscription.stop();
      limiter.close();
      deps.mailer?.close();
    },
  };
};
