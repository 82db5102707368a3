import Database from 'better-sqlite3';

/**
 * Group commit on one SQLite connection that never makes its thread sleep on another
 * connection's write lock.
 *
 * - Writes queued in the same turn of the event loop run in one `BEGIN IMMEDIATE` transaction,
 *   so they share one commit (one fsync at `synchronous=full`). Each write runs on its own: one
 *   that throws fails alone (a write of several statements must be a nested transaction, that is
 *   a savepoint, to be undone alone). A write's promise settles once the shared transaction has
 *   committed.
 * - When another connection (a thread or a process) holds the write lock, the attempt fails at
 *   once instead of waiting in SQLite's busy handler, which sleeps the whole thread for 1, 2,
 *   5, 10 ... ms and so stopped every request of an API thread. The thread goes on serving; the
 *   transaction is tried again on the next turn, then every millisecond or as soon as another
 *   thread of the process says it committed (`lockReleased`), and the writes queued meanwhile
 *   join it. After the connection's busy timeout without the lock, the queued writes
 *   reject with the busy error, as SQLite's own busy timeout would.
 * - Reads on the connection keep the connection's own busy timeout: only the lock attempt does
 *   not wait.
 */
export interface GroupCommit {
  /** Runs `write` inside the next shared transaction; settles when that transaction has committed. */
  enqueue<T>(write: () => T): Promise<T>;
  /**
   * Another connection has just committed (its thread said so): a transaction waiting for the
   * write lock is tried again on the next turn instead of at its next millisecond.
   */
  lockReleased(): void;
  /** Rejects every queued write with `error` and refuses new ones with it. */
  close(error: unknown): void;
}

export interface GroupCommitOptions {
  /** Called after each commit, before the writes' promises settle. */
  readonly onCommitted?: () => void;
  /** Maps a failure of the shared transaction (or of a write) to what the caller rejects with. */
  readonly mapError: (error: unknown) => unknown;
}

interface QueuedWrite {
  readonly write: () => unknown;
  readonly resolve: (value: never) => void;
  readonly reject: (error: unknown) => void;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/**
 * Each queued write in turn, in the transaction: its value, or what it threw. A function of the
 * module, not an arrow made in every call: an arrow made per call that runs hot within it is
 * optimised by V8 on its own, and under load such arrows were compiled again every few seconds
 * (their code seemingly dropped at full collections; docs/performance.md, session 21).
 */
const writeEach = (batch: readonly QueuedWrite[]): Outcome[] => {
  const outcomes: Outcome[] = [];
  for (const queued of batch) {
    try {
      outcomes.push({ ok: true, value: queued.write() });
    } catch (error) {
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
};

export const isBusy = (error: unknown): boolean =>
  error instanceof Database.SqliteError && (error.code === 'SQLITE_BUSY' || error.code.startsWith('SQLITE_BUSY_'));

export const createGroupCommit = (db: Database.Database, options: GroupCommitOptions): GroupCommit => {
  // Queued writes wait for the lock as long as the connection's own busy timeout says. A
  // busy_timeout pragma takes effect when it is compiled, not when a prepared copy is stepped
  // again, so it is issued afresh each time.
  const busyTimeoutMs = Number(db.pragma('busy_timeout', { simple: true }));
  const busyTimeout = `busy_timeout = ${busyTimeoutMs}`;
  // Loops, not arrows made in each call: see writeEach.
  const commitAll = db.transaction(writeEach);

  let queue: QueuedWrite[] = [];
  let scheduled = false;
  /** The retry a millisecond ahead, while waiting for another connection's lock. */
  let retry: NodeJS.Timeout | undefined;
  let waitingSince: number | undefined;
  let attempts = 0;
  let closedWith: { error: unknown } | undefined;

  /** The first try and the first retry on the next turn of the event loop, later ones every millisecond. */
  const schedule = (): void => {
    scheduled = true;
    if (attempts > 1) retry = setTimeout(flush, 1);
    else setImmediate(flush);
  };
  const settled = (): QueuedWrite[] => {
    const batch = queue;
    queue = [];
    waitingSince = undefined;
    attempts = 0;
    return batch;
  };

  /** Tries the write lock without waiting; undefined when another connection holds it. */
  const tryCommit = (batch: readonly QueuedWrite[]): Outcome[] | undefined => {
    db.pragma('busy_timeout = 0');
    try {
      return commitAll.immediate(batch);
    } catch (error) {
      if (isBusy(error) && !db.inTransaction) return undefined;
      throw error;
    } finally {
      db.pragma(busyTimeout);
    }
  };

  const flush = (): void => {
    scheduled = false;
    retry = undefined;
    if (closedWith || queue.length === 0) return;
    let outcomes: Outcome[] | undefined;
    attempts += 1;
    try {
      outcomes = tryCommit(queue);
    } catch (error) {
      const mapped = options.mapError(error);
      for (const queued of settled()) queued.reject(mapped);
      return;
    }
    if (outcomes === undefined) {
      waitingSince ??= Date.now();
      if (Date.now() - waitingSince < busyTimeoutMs) return schedule();
      const mapped = options.mapError(busyTimeoutError(busyTimeoutMs));
      for (const queued of settled()) queued.reject(mapped);
      return;
    }
    const batch = settled();
    options.onCommitted?.();
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i]!;
      if (outcome.ok) batch[i]!.resolve(outcome.value as never);
      else batch[i]!.reject(options.mapError(outcome.error));
    }
  };

  return {
    enqueue: <T>(write: () => T): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        if (closedWith) return reject(closedWith.error);
        queue.push({ write, resolve: resolve as (value: never) => void, reject });
        if (!scheduled) schedule();
      }),
    lockReleased: () => {
      if (retry === undefined) return;
      clearTimeout(retry);
      retry = undefined;
      setImmediate(flush);
    },
    close: (error) => {
      closedWith ??= { error };
      for (const queued of settled()) queued.reject(error);
    },
  };
};

/** The error queued writes fail with when the lock stayed taken: SQLite's own busy error. */
const busyTimeoutError = (ms: number): Error =>
  new Database.SqliteError(`database is locked (the write lock stayed taken for ${ms} ms)`, 'SQLITE_BUSY');
