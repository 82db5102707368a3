import type { Logger } from 'pino';
import type { DataKey, MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { KeyChanges, KeyVault } from '../../infra/event-store/port.ts';

export interface SealingWindowOptions {
  /** How long one data key seals an app's new messages. */
  readonly windowMs: number;
  /** At most this many messages under one key. */
  readonly maxUses: number;
  /** How long a key may live at all (MESSAGE_RETENTION_HOURS). */
  readonly retentionMs: number;
}

/** The key to seal with, and the change that stores it (a new window) or checks that it is still there, in the same append as the messages. */
export interface Taken {
  readonly key: DataKey;
  readonly change: KeyChanges;
}

interface Window {
  readonly key: DataKey;
  readonly openedAt: number;
  uses: number;
  /** Whether an append that put the key has committed (only then may others require it). */
  stored: boolean;
}

/**
 * A data key per app and period (docs/privacy.md): the messages one app sends or receives within
 * `windowMs` (at most `maxUses` of them) are sealed under one key, so a busy app makes one key
 * write per period instead of one per message.
 *
 * The key is put with `maxUses` uses, a reservation for every message the window may seal: later
 * messages only require the key (their append fails, writing nothing, if it is gone), and no
 * delivery or poll can use it up while the window is open. When the window closes, the uses it
 * did not take are released; the key is destroyed once every message it sealed is done. Each
 * payload stays bound to its own batch or message (the sealer's additional data), whatever key
 * seals it.
 *
 * Until the append that puts a window's key has committed (the caller says so: `settled`), other
 * appends cannot require it: on PostgreSQL they run in transactions of their own, and a require
 * that ran before the put committed would find no key. Such a take gets a one-off key of its own,
 * reserving just its uses (milliseconds at the start of a window, under concurrent sends).
 *
 * A window whose key turned out gone (the append that was to put it failed, the retention ran
 * out, the app was deleted) is dropped by the caller and a new one opened. If a process dies with
 * a window open, its reservation is never released and the key lives out its retention.
 */
export class SealingWindows {
  private readonly windows = new Map<string, Window>();
  private readonly sweeper: NodeJS.Timeout;
  /** A window seals at most this long: its period, and no more than half the retention (a tiny retention must not outlive its window's messages). */
  private readonly lifetimeMs: number;
  private closed = false;

  constructor(
    private readonly sealer: MessageSealer,
    private readonly vault: KeyVault,
    private readonly options: SealingWindowOptions,
    private readonly log: Logger,
  ) {
    this.lifetimeMs = Math.max(1, Math.min(options.windowMs, Math.floor(options.retentionMs / 2)));
    // A window nobody writes to any more is closed too, so its reservation does not outlive it.
    this.sweeper = setInterval(() => this.closeOlderThan(Date.now() - this.lifetimeMs), this.lifetimeMs);
    this.sweeper.unref();
  }

  /** A key to seal `uses` more messages of `scope` with; `subject` names what the first ones are. */
  take(scope: string, subject: string, uses: number, now: Date): Taken {
    if (this.closed) throw new Error('The sealing windows are closed');
    const at = now.getTime();
    const open = this.windows.get(scope);
    if (open && at - open.openedAt < this.lifetimeMs && open.uses + uses <= this.options.maxUses) {
      if (!open.stored) {
        const oneOff = this.sealer.newKey();
        return { key: oneOff, change: { put: [{ id: oneOff.id, scope, subject, wrapped: oneOff.wrapped, uses, expiresAt: new Date(at + this.options.retentionMs) }] } };
      }
      open.uses += uses;
      return { key: open.key, change: { require: [open.key.id] } };
    }
    if (open) this.end(scope, open);
    const key = this.sealer.newKey();
    const reserved = Math.max(this.options.maxUses, uses);
    this.windows.set(scope, { key, openedAt: at, uses, stored: false });
    return {
      key,
      change: { put: [{ id: key.id, scope, subject, wrapped: key.wrapped, uses: reserved, expiresAt: new Date(at + this.options.retentionMs) }] },
    };
  }

  /**
   * The append that carried `change` is over: when it was written, the keys it put may now be
   * required by others; when it was not (it failed, or had nothing to append), their windows are
   * forgotten, since those keys do not exist.
   */
  settled(change: KeyChanges, written: boolean): void {
    if (!change.put) return;
    const ids = change.put.map((key) => key.id);
    if (!written) return this.drop(ids);
    for (const window of this.windows.values()) if (!window.stored && ids.includes(window.key.id)) window.stored = true;
  }

  /** The keys could not be used (DataKeyGoneError): their windows are forgotten, the next take opens new ones. */
  drop(keyIds: readonly string[]): void {
    for (const [scope, window] of this.windows) if (keyIds.includes(window.key.id)) this.windows.delete(scope);
  }

  /** Closes every window, releasing what they did not use (at shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const unused = [...this.windows.values()].map((window) => this.unused(window)).filter((release) => release.uses > 0);
    this.windows.clear();
    if (unused.length > 0) await this.vault.release(unused).catch((error: unknown) => this.log.warn({ err: error }, 'sealing windows: reservations not released; their keys live out their retention'));
  }

  private unused(window: Window): { id: string; uses: number } {
    return { id: window.key.id, uses: Math.max(this.options.maxUses, window.uses) - window.uses };
  }

  private closeOlderThan(limit: number): void {
    for (const [scope, window] of this.windows) if (window.openedAt <= limit) this.end(scope, window);
  }

  private end(scope: string, window: Window): void {
    this.windows.delete(scope);
    const unused = this.unused(window);
    if (unused.uses === 0) return; // full: its messages' own releases retire it
    void this.vault.release([unused]).catch((error: unknown) => this.log.warn({ err: error }, 'sealing window: reservation not released; the key lives out its retention'));
  }
}

/** The key changes of several apps' windows as one (the keys of several apps in one append). */
export const mergeKeyChanges = (changes: readonly KeyChanges[]): KeyChanges => {
  if (changes.length === 1) return changes[0]!; // one app: the common case, on every send
  const put: NonNullable<KeyChanges['put']>[number][] = [];
  const require: string[] = [];
  for (const change of changes) {
    if (change.put) put.push(...change.put);
    if (change.require) require.push(...change.require);
  }
  return { put, require };
};
