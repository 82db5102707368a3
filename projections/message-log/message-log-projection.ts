import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';
import { Recency } from '../recency.ts';
import {
  addStep,
  KEEP_HOURS,
  MAX_PER_APP,
  MAX_TOTAL,
  MAX_WEBHOOK_ATTEMPTS,
  type LogEntry,
  type LogStatus,
  type LogStep,
  type MessageLogFilter,
  type MessageLogView,
  type WebhookAttempt,
  type WebhookHealth,
} from './entries.ts';

/** One app's log: its messages in the order they came (a Map keeps it), and its webhook's last attempts, newest last. */
interface AppLog {
  readonly userId: string;
  readonly messages: Map<string, LogEntry>;
  webhook: WebhookAttempt[];
}

interface StoredLog {
  apps: Array<{ id: string; userId: string; messages: LogEntry[]; webhook: WebhookAttempt[] }>;
  clock: number | null;
}

type Data = Record<string, unknown> & { appId?: unknown; messageId?: unknown };

const KEEP_MS = KEEP_HOURS * 3_600_000;
const FINAL: ReadonlySet<LogStatus> = new Set(['delivered', 'abandoned', 'polled', 'expired']);

/**
 * The message log of every app (docs/dashboard.md, "Message log"): the recent outbound and inbound
 * messages with their status and the steps that led there, folded from the history's `app`,
 * `sendbatch`, `outbound`, `inbound`, `shred` and `popcursor` events. Never a body or a contact id:
 * the history holds them sealed, and the log opens nothing.
 *
 * Bounded: the last MAX_PER_APP (200) messages of each app, MAX_TOTAL (20,000) in all (beyond it,
 * the oldest message of the app quiet the longest goes), MAX_STEPS steps a message, the last 20
 * webhook attempts of an app; a message leaves KEEP_HOURS (7 days) after its last step, against
 * the log's clock (the newest event's commit time, so a rebuild from event 0 equals the live log).
 * A deleted app's log goes with it.
 */
export class MessageLogProjection implements Projection {
  readonly name = 'message-log';
  readonly categories = ['app', 'sendbatch', 'outbound', 'inbound', 'shred', 'popcursor'] as const;
  /** Live apps. */
  private readonly apps = new Map<string, AppLog>();
  /** The apps that hold messages, the one quiet the longest first. */
  private readonly active = new Recency<string>();
  private total = 0;
  private clock: number | null = null;
  private sweptAt = Number.NEGATIVE_INFINITY;

  apply(recorded: RecordedEvent): void {
    const data = (recorded.data ?? {}) as Data;
    const at = recorded.recordedAt.getTime();
    if (this.clock === null || at > this.clock) this.clock = at;
    switch (recorded.type) {
      case 'AppCreated':
        if (typeof data.appId === 'string' && typeof data.userId === 'string') this.apps.set(data.appId, { userId: data.userId, messages: new Map(), webhook: [] });
        return;
      case 'AppDeleted':
        if (typeof data.appId === 'string') this.drop(data.appId);
        return;
      case 'MessagesAccepted':
        for (const m of (data.messages ?? []) as Array<{ messageId: string; appId: string; messenger: string; keyId?: string }>)
          this.add(m.appId, { messageId: m.messageId, direction: 'outbound', messenger: m.messenger, status: 'accepted', reason: null, at: String(data.acceptedAt), updatedAt: String(data.acceptedAt), attempts: 0, steps: [{ at: String(data.acceptedAt), what: 'accepted' }], keyId: m.keyId ?? null });
        break;
      case 'InboundMessageReceived':
        this.add(String(data.appId), { messageId: String(data.messageId), direction: 'inbound', messenger: String(data.messenger), status: 'received', reason: null, at: String(data.receivedAt), updatedAt: String(data.receivedAt), attempts: 0, steps: [{ at: String(data.receivedAt), what: 'received' }], keyId: typeof data.keyId === 'string' ? data.keyId : null });
        break;
      case 'BodiesForgotten':
        this.forgotten((data.keys ?? []) as Array<{ keyId: string; appId: string; reason: string }>, String(data.forgottenAt));
        break;
      case 'RecordsPopped':
        this.popped(recorded.streamName, (data.ids ?? []) as string[], recorded.recordedAt.toISOString());
        break;
      default:
        this.outcome(recorded.type, data);
    }
    this.sweep();
  }

  /** The outcome events of one message (`outbound-*`, `inbound-*`). */
  private outcome(type: string, data: Data): void {
    if (type === 'InboundWebhookAttempted') return this.webhookAttempt(data);
    const entry = this.entry(data.appId, data.messageId);
    if (!entry) return;
    const attempt = typeof data.attempt === 'number' ? data.attempt : undefined;
    const reason = typeof data.reason === 'string' ? data.reason : undefined;
    const retry = data.retry as { dueAt?: string } | undefined;
    switch (type) {
      case 'DeliveryAttemptFailed':
        entry.attempts = Math.max(entry.attempts, attempt ?? 0);
        if (!FINAL.has(entry.status)) Object.assign(entry, { status: 'failed', reason: reason ?? null });
        return addStep(entry, { at: String(data.failedAt), what: 'attempt-failed', ...(attempt ? { attempt } : {}), ...(reason ? { reason } : {}), ...(retry?.dueAt ? { dueAt: retry.dueAt } : {}) });
      case 'DeliveryDeferred':
        if (!FINAL.has(entry.status)) Object.assign(entry, { status: 'deferred', reason: reason ?? null });
        return addStep(entry, { at: String(data.deferredAt), what: 'deferred', ...(attempt ? { attempt } : {}), ...(reason ? { reason } : {}), ...(retry?.dueAt ? { dueAt: retry.dueAt } : {}) });
      case 'DeliveryTimestamped':
        return addStep(entry, { at: String(data.timestampedAt), what: 'timestamped', ...(attempt ? { attempt } : {}) });
      case 'MessageDelivered':
        entry.attempts = Math.max(entry.attempts, attempt ?? 0);
        Object.assign(entry, { status: 'delivered', reason: null });
        return addStep(entry, { at: String(data.deliveredAt), what: 'delivered', ...(attempt ? { attempt } : {}) });
      case 'MessageAbandoned':
      case 'InboundWebhookAbandoned':
        entry.attempts = Math.max(entry.attempts, typeof data.attempts === 'number' ? data.attempts : 0);
        Object.assign(entry, { status: 'abandoned', reason: reason ?? null });
        return addStep(entry, { at: String(data.abandonedAt), what: 'abandoned', ...(reason ? { reason } : {}) });
    }
  }

  /** A webhook attempt: the app's list of attempts, and its message's steps while the log holds it. */
  private webhookAttempt(data: Data): void {
    const log = typeof data.appId === 'string' ? this.apps.get(data.appId) : undefined;
    if (!log) return;
    const attempt: WebhookAttempt = {
      messageId: String(data.messageId),
      attempt: Number(data.attempt),
      at: String(data.attemptedAt),
      ok: data.ok === true,
      status: typeof data.status === 'number' ? data.status : null,
      reason: typeof data.reason === 'string' ? data.reason : null,
      durationMs: Number(data.durationMs),
    };
    log.webhook.push(attempt);
    if (log.webhook.length > MAX_WEBHOOK_ATTEMPTS) log.webhook.shift();
    const entry = log.messages.get(attempt.messageId);
    if (!entry) return;
    entry.attempts = Math.max(entry.attempts, attempt.attempt);
    if (attempt.ok) Object.assign(entry, { status: 'delivered', reason: null });
    else if (!FINAL.has(entry.status)) entry.reason = attempt.reason;
    const step: LogStep = { at: attempt.at, what: attempt.ok ? 'webhook-delivered' : 'webhook-failed', attempt: attempt.attempt, status: attempt.status, durationMs: attempt.durationMs };
    addStep(entry, attempt.reason ? { ...step, reason: attempt.reason } : step);
  }

  /** Keys forgotten: the inbound messages they sealed that still waited were picked up (finished) or expired (retention). */
  private forgotten(keys: ReadonlyArray<{ keyId: string; appId: string; reason: string }>, at: string): void {
    for (const key of keys) {
      for (const entry of this.apps.get(key.appId)?.messages.values() ?? []) {
        if (entry.keyId !== key.keyId || entry.status !== 'received') continue;
        const expired = key.reason === 'retention';
        Object.assign(entry, { status: expired ? 'expired' : 'polled', reason: expired ? 'Forgotten before a poll took it (MESSAGE_RETENTION_HOURS)' : null });
        addStep(entry, { at, what: expired ? 'forgotten' : 'picked-up' });
      }
    }
  }

  /** On Kafka, a poll's claim names the messages it took at once. */
  private popped(streamName: string, ids: readonly string[], at: string): void {
    const appId = streamName.match(/^popcursor-.*inbound\.([^.]+)$/)?.[1];
    const log = appId ? this.apps.get(appId) : undefined;
    if (!log) return;
    for (const id of ids) {
      const entry = log.messages.get(id);
      if (entry?.status !== 'received') continue;
      entry.status = 'polled';
      addStep(entry, { at, what: 'picked-up' });
    }
  }

  private entry(appId: unknown, messageId: unknown): LogEntry | undefined {
    return typeof appId === 'string' && typeof messageId === 'string' ? this.apps.get(appId)?.messages.get(messageId) : undefined;
  }

  private add(appId: string, entry: LogEntry): void {
    const log = this.apps.get(appId);
    if (!log || log.messages.has(entry.messageId)) return;
    log.messages.set(entry.messageId, entry);
    this.total++;
    this.active.touch(appId);
    if (log.messages.size > MAX_PER_APP) this.removeOldest(appId, log);
    // The app quiet the longest is the first of those with messages: found without a walk of the
    // apps (with 25,000 apps, a walk per message made a replay of the history 30 times slower).
    while (this.total > MAX_TOTAL) {
      const quietest = this.active.oldest()?.[0];
      if (quietest === undefined) break;
      this.removeOldest(quietest, this.apps.get(quietest)!);
    }
  }

  private removeOldest(appId: string, log: AppLog): void {
    const oldest = log.messages.keys().next();
    if (oldest.done) return;
    log.messages.delete(oldest.value);
    this.total--;
    if (log.messages.size === 0) this.active.forget(appId);
  }

  private drop(appId: string): void {
    this.total -= this.apps.get(appId)?.messages.size ?? 0;
    this.apps.delete(appId);
    this.active.forget(appId);
  }

  /** Once per hour of the clock: messages whose last step is older than KEEP_HOURS leave. */
  private sweep(): void {
    if (this.clock === null || this.clock - this.sweptAt < 3_600_000) return;
    this.sweptAt = this.clock;
    const oldest = new Date(this.clock - KEEP_MS).toISOString();
    // Only the apps that hold messages (at most MAX_TOTAL messages in all): a walk of every app
    // each hour of the clock made a replay of a year with 25,000 apps spend a fifth of its time here.
    for (const appId of [...this.active.keys()]) {
      const log = this.apps.get(appId)!;
      for (const entry of log.messages.values())
        if (entry.updatedAt < oldest) {
          log.messages.delete(entry.messageId);
          this.total--;
        }
      if (log.messages.size === 0) this.active.forget(appId);
    }
  }

  /** The log of one of the user's apps, newest first, filtered; undefined for another user's app or an unknown one. */
  forApp(userId: string, appId: string, filter: MessageLogFilter = {}): MessageLogView | undefined {
    const log = this.apps.get(appId);
    if (!log || log.userId !== userId) return undefined;
    const messages = [...log.messages.values()].filter((m) => (!filter.status || m.status === filter.status) && (!filter.messenger || m.messenger === filter.messenger)).reverse();
    return { messages, kept: log.messages.size, webhook: webhookHealth(log.webhook), limits: { perApp: MAX_PER_APP, total: MAX_TOTAL, keepHours: KEEP_HOURS } };
  }

  /** Messages the log holds in all. */
  get size(): number {
    return this.total;
  }

  snapshot(): unknown {
    // The apps without messages first, then those with, the one quiet the longest first: a restore
    // keeps that order.
    const ordered = this.active.inOrder();
    const holding = new Set(ordered);
    const ids = [...[...this.apps.keys()].filter((id) => !holding.has(id)), ...ordered];
    const stored: StoredLog = {
      apps: ids.map((id) => {
        const log = this.apps.get(id)!;
        return { id, userId: log.userId, messages: [...log.messages.values()], webhook: log.webhook };
      }),
      clock: this.clock,
    };
    return stored;
  }

  restore(snapshot: unknown): void {
    this.apps.clear();
    this.active.clear();
    this.total = 0;
    this.sweptAt = Number.NEGATIVE_INFINITY;
    const stored = snapshot as Partial<StoredLog>;
    this.clock = stored.clock ?? null;
    for (const app of stored.apps ?? []) {
      const log: AppLog = { userId: app.userId, messages: new Map(app.messages.map((m) => [m.messageId, m])), webhook: app.webhook };
      this.apps.set(app.id, log);
      if (log.messages.size > 0) this.active.touch(app.id);
      this.total += app.messages.length;
    }
  }
}

/** Failing when the last attempt failed: since the first failure of the run that ends with it. */
export const webhookHealth = (attempts: readonly WebhookAttempt[]): WebhookHealth => {
  const newestFirst = [...attempts].reverse();
  const run = newestFirst.findIndex((a) => a.ok);
  const failures = run === -1 ? newestFirst.length : run;
  const state = newestFirst.length === 0 ? 'unknown' : failures > 0 ? 'failing' : 'ok';
  return { state, failingSince: failures > 0 ? newestFirst[failures - 1]!.at : null, failuresInARow: failures, attempts: newestFirst };
};
