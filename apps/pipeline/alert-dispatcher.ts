import type { Logger } from 'pino';
import { alertDecider, alertStreamName } from '../../domain/alert/decider.ts';
import type { AlertChannel } from '../../domain/user/notification-preferences.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import { MailUnavailableError, type Mailer } from '../../infra/mail/mailer.ts';
import { RateLimiter } from '../api/rate-limiter.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { UsersProjection } from '../../projections/users/users-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { ALERTING, alertFor } from './alerts.ts';
import { checkpoints } from './topology.ts';

export interface AlertDispatcherDeps {
  readonly store: EventStore;
  readonly apps: AppsProjection;
  readonly users: UsersProjection;
  readonly mailer: Mailer;
  readonly log: Logger;
  /** Pauses between the tries of a mail the server did not take. */
  readonly retryDelaysMs?: readonly number[];
  /** At most this many alerts of one category to one user per hour; more are left out (and logged). */
  readonly perHour?: number;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Tells users what happened to their apps and account, as their notification preferences say:
 * follows the events that alert (a message given up on, a bot's daemon down or back, a sign-in, a
 * credential made or deleted) behind the events themselves, so an alert never holds up what caused
 * it, and mails the owner. Each alert is an event on `alert-<eventId>` (`AlertSent`, or
 * `AlertFailed` after three tries), recorded once per channel. The messenger channels wait for
 * linked contacts (not built): only e-mail goes out.
 */
export const startAlertDispatcher = async (deps: AlertDispatcherDeps): Promise<CheckpointedSubscription> => {
  const log = deps.log.child({ component: 'alerts' });
  const retryDelays = deps.retryDelaysMs ?? [1000, 5000];
  const limiter = new RateLimiter(3_600_000, 600_000);
  const channel: AlertChannel = 'email';

  const alert = async (event: RecordedEvent) => {
    const found = alertFor(event, deps.apps);
    if (!found) return;
    const user = deps.users.user(found.userId);
    if (!user || !deps.users.preferencesOf(found.userId)[channel][found.category]) return;
    const done = await deps.store.readStream(alertStreamName(event.id));
    if (done.events.some((e) => (e.data as { channel?: string }).channel === channel)) return;
    if (!limiter.consume(`${found.userId}:${found.category}`, 1, deps.perHour ?? 20).allowed) {
      log.warn({ userId: found.userId, category: found.category }, 'alert left out: too many of this category this hour');
      return;
    }
    let outcome: { sent: true; subject: string } | { sent: false; reason: string } = { sent: true, subject: found.subject };
    for (let tryNumber = 0; ; tryNumber++) {
      try {
        await deps.mailer.send({ to: user.email, subject: found.subject, text: found.text });
        break;
      } catch (error) {
        if (!(error instanceof MailUnavailableError) || tryNumber >= retryDelays.length) {
          outcome = { sent: false, reason: error instanceof MailUnavailableError ? error.message : 'The mail could not be sent' };
          break;
        }
        await wait(retryDelays[tryNumber]!);
      }
    }
    await handleCommand(
      deps.store,
      alertStreamName(event.id),
      alertDecider,
      { type: 'RecordAlert', data: { causationId: event.id, userId: found.userId, category: found.category, channel, outcome, now: new Date() } },
      { actor: 'system:alerts', causationId: event.id },
    );
    if (!outcome.sent) log.warn({ userId: found.userId, category: found.category, reason: outcome.reason }, 'alert not sent');
  };

  // A first start alerts from now on, not for the whole history before it.
  if ((await deps.store.readCheckpoint(checkpoints.alertDispatcher)) === undefined) await deps.store.storeCheckpoint(checkpoints.alertDispatcher, await deps.store.headPosition());
  const subscription = await startCheckpointedSubscription(deps.store, {
    name: checkpoints.alertDispatcher,
    filter: { categories: [...ALERTING.categories], types: [...ALERTING.types] },
    log,
    batchSize: 20,
    handler: async (events) => {
      for (const event of events) await alert(event);
    },
  });
  return {
    catchUp: () => subscription.catchUp(),
    stop: async () => {
      await subscription.stop();
      limiter.close();
      deps.mailer.close();
    },
  };
};
