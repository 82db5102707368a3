/**
 * Tells other processes that this one appended (append-listener.ts listens), at most once per
 * `minIntervalMs` and never inside an append's transaction.
 *
 * Why not `pg_notify` in `append_events`, as before session 32: a transaction that notifies takes
 * PostgreSQL's one notification lock (a lock on database object 0) before its commit and holds it
 * until the commit's WAL flush, so every appending transaction of the cluster committed one after
 * the other, ~310 deliveries a second on this VM. A notification sent on its own afterwards is a
 * transaction with no writes: no WAL flush under the lock.
 *
 * - The first append after a quiet spell is told at once (one round trip after its commit).
 * - Appends during a notification in flight, or within `minIntervalMs` of the last one, are told by
 *   one more notification once both have passed: never before their commit. (A listener keeps
 *   looking every poll interval for a moment after a notification anyway.)
 * - A failed notification is not retried: listeners also look about once a second.
 * - `flush()` (at close) sends what is owed and waits for it.
 */
export interface AppendNotifier {
  /** An append committed. */
  appended(): void;
  flush(): Promise<void>;
}

export const appendNotifier = (send: () => Promise<unknown>, minIntervalMs: number): AppendNotifier => {
  let owed = false;
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let lastSent = Number.NEGATIVE_INFINITY;

  const fire = (): void => {
    owed = false;
    lastSent = Date.now();
    inFlight = send()
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        inFlight = undefined;
        pump();
      });
  };
  const pump = (): void => {
    if (!owed || inFlight !== undefined || timer !== undefined) return;
    const wait = lastSent + minIntervalMs - Date.now();
    if (wait <= 0) return fire();
    timer = setTimeout(() => {
      timer = undefined;
      pump();
    }, wait);
    timer.unref();
  };

  return {
    appended() {
      owed = true;
      pump();
    },
    async flush() {
      clearTimeout(timer);
      timer = undefined;
      while (inFlight !== undefined) await inFlight;
      if (owed) {
        owed = false;
        await send().catch(() => undefined);
      }
    },
  };
};
