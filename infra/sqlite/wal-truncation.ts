import type Database from 'better-sqlite3';
import { isBusy } from './group-commit.ts';

/**
 * Truncates a WAL-mode database's `-wal` file after deletions that must leave no copy behind.
 *
 * With `secure_delete` on, SQLite overwrites a deleted row's bytes in its page, but the `-wal`
 * file still holds the images of that page written by earlier commits, until a checkpoint that
 * truncates it. `wal_checkpoint(TRUNCATE)` copies every frame into the database file and empties
 * the `-wal`, but only once no other connection reads an older snapshot and none writes.
 *
 * It is tried at most every `intervalMs` after a request, never waiting: the busy timeout is 0
 * for the attempt (SQLite's busy handler would sleep the thread), and a checkpoint that cannot
 * complete (a reader or writer elsewhere) is simply tried again `intervalMs` later, for as long
 * as it takes. The write lock is held only for the copy of the frames (the WAL stays small: SQLite
 * checkpoints it every ~1000 pages).
 */
export interface WalTruncation {
  /** Something was deleted that must leave no copy: truncate the WAL soon. */
  request(): void;
  /** Whether a truncation is requested and not done yet. */
  readonly pending: boolean;
  /** Tries now (if requested) and stops trying. */
  close(): void;
}

export interface WalTruncationOptions {
  /** Least time between two attempts. */
  readonly intervalMs: number;
  /** Told the outcome of each attempt (for tests and logs). */
  readonly onAttempt?: (truncated: boolean) => void;
}

export const createWalTruncation = (db: Database.Database, options: WalTruncationOptions): WalTruncation => {
  const { intervalMs } = options;
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 1) throw new RangeError(`intervalMs must be a positive integer, got ${intervalMs}`);
  const busyTimeout = `busy_timeout = ${Number(db.pragma('busy_timeout', { simple: true }))}`;
  let pending = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let lastAttempt = Number.NEGATIVE_INFINITY;

  /** One attempt without waiting; true when the WAL was emptied. */
  const truncate = (): boolean => {
    // Within a transaction of this connection (never, between turns of the event loop) it cannot run.
    if (!db.open || db.inTransaction) return false;
    db.pragma('busy_timeout = 0');
    try {
      const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: bigint | number }[];
      return row !== undefined && Number(row.busy) === 0;
    } catch (error) {
      if (isBusy(error)) return false;
      throw error;
    } finally {
      db.pragma(busyTimeout);
    }
  };

  const attempt = (): void => {
    timer = undefined;
    if (closed || !pending) return;
    lastAttempt = Date.now();
    let truncated = false;
    try {
      truncated = truncate();
    } catch {
      // An I/O failure of the checkpoint: like a busy one, it is tried again later.
    }
    options.onAttempt?.(truncated);
    if (truncated) pending = false;
    else schedule();
  };

  const schedule = (): void => {
    if (closed || timer !== undefined) return;
    timer = setTimeout(attempt, Math.max(0, lastAttempt + intervalMs - Date.now()));
    // Pending work does not keep the process alive: close() makes the last attempt.
    timer.unref();
  };

  return {
    request() {
      if (closed) return;
      pending = true;
      schedule();
    },
    get pending() {
      return pending;
    },
    close() {
      if (closed) return;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (pending) {
        try {
          if (truncate()) pending = false;
        } catch {
          // Closing the connection checkpoints again (and removes the WAL when it is the last one).
        }
      }
      closed = true;
    },
  };
};
