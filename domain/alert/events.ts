import type { AlertCategory, AlertChannel } from '../user/notification-preferences.ts';

/**
 * On stream `alert-<eventId>`: what a user was told of the event `eventId` (the alert's cause), on
 * which channel. Subjects name apps, messengers and outcomes, never a message body or a contact.
 */
export type AlertEvent =
  | { type: 'AlertSent'; data: { causationId: string; userId: string; category: AlertCategory; channel: AlertChannel; subject: string; sentAt: string } }
  | { type: 'AlertFailed'; data: { causationId: string; userId: string; category: AlertCategory; channel: AlertChannel; reason: string; failedAt: string } };
