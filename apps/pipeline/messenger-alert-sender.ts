import { validateSendItem } from '../../domain/send-batch/validate.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import { newId } from '../../infra/ids/new-id.ts';
import { enqueueMessages } from '../api/send-messages.ts';
import type { RelayContext } from '../services/context.ts';

export type MessengerAlertOutcome = { sent: true; messageId: string } | { sent: false; reason: string };

/** Sends an alert to a contact through the bots of the operator's notification app (`NOTIFICATION_APP_ID`). */
export interface MessengerAlertSender {
  /** The notification app: its own messages given up on alert its owner by e-mail only, so an alert cannot feed itself. */
  readonly appId: string;
  /** Queues the alert like any message of that app (delivered, retried and recorded as such); throws an UnavailableError when the broker or the store cannot take it now. */
  send(messenger: Messenger, contactId: string, text: string): Promise<MessengerAlertOutcome>;
}

/** Alerts are recorded as sent by Relay itself, not by a credential. */
export const ALERT_SENDER_CREDENTIAL = 'system:alerts';

export const messengerAlertSender = (ctx: RelayContext, appId: string): MessengerAlertSender => ({
  appId,
  async send(messenger, contactId, text) {
    const app = ctx.models.apps.app(appId);
    if (!app || app.settings.status !== 'active') return { sent: false, reason: 'The notification app (NOTIFICATION_APP_ID) does not exist or is not active' };
    const bot = ctx.models.apps.appMessengerOf(appId, messenger);
    if (!bot || bot.status !== 'active') return { sent: false, reason: `The notification app has no active ${messenger} bot` };
    // A long alert goes in numbered parts rather than being refused.
    const validated = validateSendItem({ appId, messenger, contactId, message: text, split: true }, [appId]);
    if (!validated.ok) return { sent: false, reason: validated.failure.error };
    const messageId = newId.message();
    await enqueueMessages(ctx, { credentialId: ALERT_SENDER_CREDENTIAL, userId: app.userId }, [{ messageId, ...validated.message }]);
    return { sent: true, messageId };
  },
});
