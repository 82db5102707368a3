/**
 * The shapes of the message log (message-log-projection.ts): one entry per message, its status and
 * the steps that led there, and each app's last webhook attempts. Ids, messengers, times, outcomes
 * and reasons only: never a body, and never a contact id (the history holds it sealed only).
 */

export const LOG_STATUSES = ['accepted', 'deferred', 'failed', 'delivered', 'abandoned', 'received', 'polled', 'expired'] as const;
/**
 * Outbound: accepted, deferred (waiting for its bot's identity), failed (an attempt failed, another
 * follows), delivered, abandoned. Inbound: received (waiting in the app's queue, or for its
 * webhook), delivered (its webhook took it), polled (taken by a poll or the webhook), expired (forgotten unpolled after the
 * retention), abandoned (the webhook never took it).
 */
export type LogStatus = (typeof LOG_STATUSES)[number];

export interface LogStep {
  /** ISO time of the step. */
  readonly at: string;
  readonly what: 'accepted' | 'received' | 'attempt-failed' | 'deferred' | 'timestamped' | 'delivered' | 'abandoned' | 'webhook-failed' | 'webhook-delivered' | 'picked-up' | 'forgotten';
  readonly attempt?: number;
  readonly reason?: string;
  /** When the next attempt is due (a failure that is retried, a deferral). */
  readonly dueAt?: string;
  /** A webhook attempt's HTTP status (null: no answer) and how long it took. */
  readonly status?: number | null;
  readonly durationMs?: number;
}

export interface LogEntry {
  readonly messageId: string;
  readonly direction: 'outbound' | 'inbound';
  readonly messenger: string;
  status: LogStatus;
  /** Why it failed, waits or was abandoned (the last such reason); null otherwise. */
  reason: string | null;
  /** Accepted (outbound) or received (inbound). */
  readonly at: string;
  updatedAt: string;
  /** Delivery attempts made (outbound) or webhook attempts (inbound). */
  attempts: number;
  /** Oldest first, at most MAX_STEPS (the first one and the latest ones). */
  steps: LogStep[];
  /** The data key that sealed it (an inbound message is picked up when its key is forgotten as finished). */
  readonly keyId: string | null;
}

export interface WebhookAttempt {
  readonly messageId: string;
  readonly attempt: number;
  readonly at: string;
  readonly ok: boolean;
  readonly status: number | null;
  readonly reason: string | null;
  readonly durationMs: number;
}

/** An app's webhook as its attempts say: failing since the first of the failures in a row, if the last attempt failed. */
export interface WebhookHealth {
  readonly state: 'unknown' | 'ok' | 'failing';
  readonly failingSince: string | null;
  readonly failuresInARow: number;
  /** Newest first. */
  readonly attempts: readonly WebhookAttempt[];
}

export interface MessageLogFilter {
  readonly status?: LogStatus | undefined;
  readonly messenger?: string | undefined;
}

export interface MessageLogView {
  /** Newest first, filtered. */
  readonly messages: readonly LogEntry[];
  /** How many the log holds for the app, unfiltered (at most MAX_PER_APP). */
  readonly kept: number;
  readonly webhook: WebhookHealth;
  readonly limits: { readonly perApp: number; readonly total: number; readonly keepHours: number };
}

/** The last this many messages of each app. */
export const MAX_PER_APP = 200;
/** At most this many messages in all: beyond it the oldest message of the app quiet the longest goes. */
export const MAX_TOTAL = 20_000;
/** Steps kept per message: the first and the latest. */
export const MAX_STEPS = 12;
/** Webhook attempts kept per app. */
export const MAX_WEBHOOK_ATTEMPTS = 20;
/** A message leaves the log this long after its last step (against the log's clock: the newest event's time). */
export const KEEP_HOURS = 168;

export const isLogStatus = (value: unknown): value is LogStatus => typeof value === 'string' && (LOG_STATUSES as readonly string[]).includes(value);

/** Adds a step, keeping the first and the latest MAX_STEPS - 1. */
export const addStep = (entry: LogEntry, step: LogStep): void => {
  entry.steps.push(step);
  if (entry.steps.length > MAX_STEPS) entry.steps.splice(1, 1);
  if (step.at > entry.updatedAt) entry.updatedAt = step.at;
};
