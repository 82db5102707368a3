import { MESSENGERS } from '../shared/messengers.ts';

/**
 * What a user may be told of, and where. Alerts go by e-mail and, once the user has linked a
 * contact of theirs on a messenger, through the operator's notification app on that messenger.
 * Every category is on for e-mail and off for messengers until the user says otherwise.
 */
export const ALERT_CATEGORIES = ['message-abandoned', 'messenger-health', 'sign-in', 'credentials', 'invoices'] as const;
export type AlertCategory = (typeof ALERT_CATEGORIES)[number];

export const ALERT_CHANNELS = ['email', ...MESSENGERS] as const;
export type AlertChannel = (typeof ALERT_CHANNELS)[number];

export type NotificationPreferences = Record<AlertChannel, Record<AlertCategory, boolean>>;

export const defaultPreferences = (): NotificationPreferences =>
  Object.fromEntries(ALERT_CHANNELS.map((channel) => [channel, Object.fromEntries(ALERT_CATEGORIES.map((category) => [category, channel === 'email'])) as Record<AlertCategory, boolean>])) as NotificationPreferences;

/** The preferences with the changes given (channel → category → on or off); a problem in the interface's style, or undefined. */
export const changedPreferences = (
  current: NotificationPreferences,
  changes: Readonly<Record<string, unknown>>,
): { preferences: NotificationPreferences } | { problem: string } => {
  const next = structuredClone(current);
  for (const [channel, toggles] of Object.entries(changes)) {
    if (!(ALERT_CHANNELS as readonly string[]).includes(channel)) return { problem: `Invalid preferences: unknown channel ${JSON.stringify(channel.slice(0, 40))}. Channels: ${ALERT_CHANNELS.join(', ')}` };
    if (typeof toggles !== 'object' || toggles === null || Array.isArray(toggles)) return { problem: `Invalid preferences: ${channel} must be an object of categories` };
    for (const [category, on] of Object.entries(toggles)) {
      if (!(ALERT_CATEGORIES as readonly string[]).includes(category))
        return { problem: `Invalid preferences: unknown category ${JSON.stringify(category.slice(0, 40))}. Categories: ${ALERT_CATEGORIES.join(', ')}` };
      if (typeof on !== 'boolean') return { problem: `Invalid preferences: ${channel}.${category} must be true or false` };
      next[channel as AlertChannel][category as AlertCategory] = on;
    }
  }
  return { preferences: next };
};

export const samePreferences = (a: NotificationPreferences, b: NotificationPreferences): boolean =>
  ALERT_CHANNELS.every((channel) => ALERT_CATEGORIES.every((category) => a[channel][category] === b[channel][category]));
