import type { AlertCategory, AlertChannel } from '../user/notification-preferences.ts';

/**
 * On stream `alert-<eventId>`: what a user was told of the event `eventId` (the alert's cause), on
 * which channel. Subjects name apps, messengers and outcomes, never a message body or a contact.
 * On a messenger channel, `messageIds` are the messages of the notification app that carry the
 * alert (one per linked contact of that messenger): their delivery is recorded like any message's.
 */
export type AlertEvent =
  | { type: 'AlertSent'; data: { causationId: string; userId: string; category: AlertCategory; channel: AlertChannel; subject: string; messageIds?: string[]; sentAt: string } }
  | { type: 'AlertFailed'; data: { causationId: string; userId: string; category: AlertCategory; channel: AlertChannel; reason: string; failedAt: string } };
