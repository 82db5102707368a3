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

/** The key to seal with, and the change that records its new uses in the same append as the messages. */
export interface Taken {
  readonly key: DataKey;
  readonly change: KeyChanges;
}

interface Window {
  readonly key: DataKey;
  readonly openedAt: number;
  uses: number;
}

/**
 * A data key per app and period (docs/privacy.md): the messages one app sends or receives within
 * `windowMs` (at most `maxUses` of them) are sealed under one key, so a busy app makes one key
 * write per second instead of one per message. The key is put with one use more than its first
 * messages (a hold, so it cannot be used up while the window is open); later messages extend it
 * in their own appends; when the window closes the hold is released, and the key is destroyed
 * once every message it sealed is done. Each payload stays bound to its own batch or message
 * (the sealer's additional data), whatever key seals it.
 *
 * A window whose key turned out gone (the append failed, the retention ran out) is dropped by
 * the caller and a new one opened. If a process dies with a window open, the hold is never
 * released and the key lives out its retention.
 */
export class SealingWindows {
  private readonly windows = new Map<string, Window>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly sealer: MessageSealer,
    private readonly vault: KeyVault,
    private readonly options: SealingWindowOptions,
    private readonly log: Logger,
  ) {
    // A window nobody writes to any more is closed too, so its hold does not outlive it.
    this.sweeper = setInterval(() => this.closeOlderThan(Date.now() - options.windowMs), options.windowMs);
    this.sweeper.unref();
  }

  /** A key to seal `uses` more messages of `scope` with; `subject` names what the first ones are. */
  take(scope: string, subject: string, uses: number, now: Date): Taken {
    if (this.closed) throw new Error('The sealing windows are closed');
    const at = now.getTime();
    const open = this.windows.get(scope);
    if (open && at - open.openedAt < this.options.windowMs && open.uses + uses <= this.options.maxUses) {
      open.uses += uses;
      return { key: open.key, change: { extend: [{ id: open.key.id, uses }] } };
    }
    if (open) this.end(scope, open);
    const key = this.sealer.newKey();
    this.windows.set(scope, { key, openedAt: at, uses });
    return {
      key,
      change: { put: [{ id: key.id, scope, subject, wrapped: key.wrapped, uses: uses + 1, expiresAt: new Date(at + this.options.retentionMs) }] },
    };
  }

  /** The keys could not take more (DataKeyGoneError): their windows are forgotten, the next take opens new ones. */
  drop(keyIds: readonly string[]): void {
    for (const [scope, window] of this.windows) if (keyIds.includes(window.key.id)) this.windows.delete(scope);
  }

  /** Closes every window, releasing the holds (at shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const holds = [...this.windows.values()].map((window) => window.key.id);
    this.windows.clear();
    if (holds.length > 0) await this.vault.release(holds).catch((error: unknown) => this.log.warn({ err: error }, 'sealing windows: holds not released; their keys live out their retention'));
  }

  private closeOlderThan(limit: number): void {
    for (const [scope, window] of this.windows) if (window.openedAt <= limit) this.end(scope, window);
  }

  private end(scope: string, window: Window): void {
    this.windows.delete(scope);
    void this.vault.release([window.key.id]).catch((error: unknown) => this.log.warn({ err: error }, 'sealing window: hold not released; the key lives out its retention'));
  }
}

/** Two key changes as one (the keys of several apps in one append). */
export const mergeKeyChanges = (changes: readonly KeyChanges[]): KeyChanges => ({
  put: changes.flatMap((change) => change.put ?? []),
  extend: changes.flatMap((change) => change.extend ?? []),
});
