import fs from 'node:fs';

/**
 * When to look for other processes' commits to a SQLite file in WAL mode. A commit writes its
 * pages to the `-wal` file, so the file is watched (inotify on Linux): `look` runs every `busyMs`
 * from the moment the file changes until `windowMs` after its last change, and every `idleMs`
 * otherwise. An idle Relay so stops waking its threads 200 times a second for nothing.
 *
 * - The change is seen when the pages are written, before the commit is synced and shown to
 *   readers (SQLite updates the WAL index in shared memory afterwards, which raises no event): a
 *   look right after it may find nothing new (measured here: shown 0.2–6.5 ms after the first
 *   write). Hence looks every millisecond at first, and the window of looks after each change,
 *   longer than a commit's sync takes; a commit slower still is found by the next idle look.
 * - Where the file cannot be watched (it does not exist yet, the platform or file system gives no
 *   events, the watch broke), `look` runs every `busyMs`, as polling did before, and each idle
 *   look tries to watch again.
 * - Every change starts the window, this process's own commits too: under load, looks run every
 *   `busyMs` all the time, no more often than plain polling would. The eager looks last 5 ms
 *   whatever `busyMs` is: with the broker's 25, a quiet file's first change made 25 looks in each
 *   thread, and the poll of a CLI-injected message got slower (p90 +0.8 ms, measured).
 * - Where a platform reports a write late or not at all (only Linux was tried), a commit is found
 *   by the next idle look, within `idleMs`.
 */
export interface CommitWatch {
  /** `watching`: the file is watched and nothing changed lately; `busy`: looking every `busyMs`. */
  readonly state: 'watching' | 'busy';
  close(): void;
}

export interface CommitWatchOptions {
  /** The database file; its `-wal` file is watched. */
  readonly file: string;
  readonly busyMs: number;
  /** Without it (or for `:memory:`, which no other process sees), nothing is watched: `look` runs every `busyMs`. */
  readonly idleMs?: number | undefined;
  /** How long after the file's last change looks go on every `busyMs`. Default 100. */
  readonly windowMs?: number;
  /** Looks for new commits; must not throw. */
  readonly look: () => void;
}

/** How long looks come every millisecond after a quiet file changes (a sync usually takes less). */
const EAGER_MS = 5;

export const watchCommits = (options: CommitWatchOptions): CommitWatch => {
  const { busyMs, idleMs, look } = options;
  if (idleMs === undefined || options.file === ':memory:') {
    const timer = setInterval(look, busyMs).unref();
    return { state: 'busy', close: () => clearInterval(timer) };
  }
  const windowMs = options.windowMs ?? 100;
  const walFile = `${options.file}-wal`;
  let closed = false;
  let watcher: fs.FSWatcher | undefined;
  let busy: NodeJS.Timeout | undefined;
  let lastChange = 0;

  /** Until when looks come every millisecond: the first few after a quiet file changes. */
  let eagerUntil = 0;
  const stopBusy = () => {
    clearTimeout(busy);
    busy = undefined;
  };
  const tick = () => {
    busy = undefined;
    if (closed) return;
    look();
    if (watcher !== undefined && Date.now() - lastChange > windowMs) return; // quiet again
    busy = setTimeout(tick, Date.now() < eagerUntil ? 1 : busyMs);
    busy.unref();
  };
  /**
   * Looks at once, then every millisecond for up to 5 ms (a commit is usually shown within a few
   * ms of its first write: its sync), then every `busyMs` while the window lasts (or while nothing
   * is watched). Under load the file never goes quiet: no eager looks, one every `busyMs`.
   */
  const startBusy = () => {
    if (busy !== undefined || closed) return;
    eagerUntil = Date.now() + Math.min(busyMs, EAGER_MS);
    busy = setTimeout(tick, 0);
    busy.unref();
  };
  const unwatch = () => {
    watcher?.close();
    watcher = undefined;
  };
  const watch = () => {
    try {
      watcher = fs.watch(walFile, { persistent: false }, (event) => {
        lastChange = Date.now();
        // The file was removed or replaced: this watch sees it no more.
        if (event === 'rename') unwatch();
        startBusy();
      });
      watcher.on('error', () => {
        unwatch();
        startBusy();
      });
    } catch {
      watcher = undefined; // not there yet, or no watching here: polled, and tried again
    }
  };

  watch();
  if (watcher === undefined) startBusy();
  const idle = setInterval(() => {
    if (watcher === undefined) watch();
    look();
  }, idleMs);
  idle.unref();

  return {
    get state() {
      return busy === undefined ? 'watching' : 'busy';
    },
    close: () => {
      closed = true;
      clearInterval(idle);
      stopBusy();
      unwatch();
    },
  };
};
