import { type Decider, type Decision } from '../shared/decider.ts';
import type { AlertCategory, AlertChannel } from '../user/notification-preferences.ts';
import type { AlertEvent } from './events.ts';

export type AlertOutcome = { sent: true; subject: string; messageIds?: string[] } | { sent: false; reason: string };

export type AlertCommand = {
  type: 'RecordAlert';
  data: { causationId: string; userId: string; category: AlertCategory; channel: AlertChannel; outcome: AlertOutcome; now: Date };
};

/** The channels an alert went out on, or failed on: each is recorded once. */
export type AlertState = { readonly done: ReadonlySet<AlertChannel> };

export const alertStreamName = (causationId: string) => `alert-${causationId}`;

export const decide = (command: AlertCommand, state: AlertState): Decision<AlertEvent> => {
  const { causationId, userId, category, channel, outcome, now } = command.data;
  if (state.done.has(channel)) return [];
  return outcome.sent
    ? [{ type: 'AlertSent', data: { causationId, userId, category, channel, subject: outcome.subject, ...(outcome.messageIds ? { messageIds: outcome.messageIds } : {}), sentAt: now.toISOString() } }]
    : [{ type: 'AlertFailed', data: { causationId, userId, category, channel, reason: outcome.reason, failedAt: now.toISOString() } }];
};

export const evolve = (state: AlertState, event: AlertEvent): AlertState => ({ done: new Set([...state.done, event.data.channel]) });

export const alertDecider: Decider<AlertState, AlertCommand, AlertEvent> = { decide, evolve, initialState: () => ({ done: new Set() }) };
