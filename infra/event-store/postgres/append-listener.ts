import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * The channel `append_events` notifies on commit (one per schema; a channel name is at most 63
 * bytes, a schema name may be 63 itself, so it is named by a digest).
 */
export const appendChannel = (schema: string): string => `relay_appended_${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`;

export interface AppendListenerOptions {
  readonly connectionString: string;
  readonly channel: string;
  /** The poll while nothing is heard: as often as before, while the listening connection is not up. */
  readonly pollIntervalMs: number;
  /** How often to look when all is quiet and the connection listens (a transaction of another writer that appends nothing still moves the safe head). */
  readonly quietPollMs?: number;
  /** How long after a notification to keep looking every `pollIntervalMs` (an older transaction may still hold the safe head back). */
  readonly afterNoticeMs?: number;
}

/**
 * What wakes the PostgreSQL store's subscriptions (SubscriptionRegistryOptions.poller): a
 * connection of its own that LISTENs to the appends of every process on the schema, so that a
 * quiet Relay asks PostgreSQL about once a second instead of 40 times (issue 49: the idle CPU of
 * every instance). After a notification it looks every `pollIntervalMs` for `afterNoticeMs`; while
 * the connection is down it looks every `pollIntervalMs`, and connects again.
 */
export const listenForAppends = (options: AppendListenerOptions, poll: () => void): { close(): void } => {
  const quietPollMs = options.quietPollMs ?? 1_000;
  const afterNoticeMs = options.afterNoticeMs ?? 500;
  let closed = false;
  let client: pg.Client | undefined;
  let listening = false;
  let busyUntil = 0;
  let lastPoll = 0;
  let reconnect: NodeJS.Timeout | undefined;
  let ticker: NodeJS.Timeout | undefined;

  const look = (): void => {
    lastPoll = Date.now();
    poll();
  };
  /**
   * How long until it must look: every `pollIntervalMs` while it matters (no connection, a
   * notification just heard), else when the last look is `quietPollMs` old. A timer armed for that
   * moment, not an interval at `pollIntervalMs` that mostly found nothing to do: that woke each
   * thread 40 times a second on a quiet Relay (issue 49, session 35).
   */
  const untilNextLook = (now: number): number => (!listening || now < busyUntil ? options.pollIntervalMs : Math.max(0, lastPoll + quietPollMs - now));
  const tick = (): void => {
    const now = Date.now();
    if (!listening || now < busyUntil || now - lastPoll >= quietPollMs) look();
    arm();
  };
  const arm = (): void => {
    clearTimeout(ticker);
    if (!closed) ticker = setTimeout(tick, untilNextLook(Date.now())).unref();
  };

  const connect = (): void => {
    if (closed) return;
    const next = new pg.Client({ connectionString: options.connectionString, keepAlive: true, connectionTimeoutMillis: 5_000 });
    client = next;
    const lost = (): void => {
      if (client !== next) return;
      listening = false;
      client = undefined;
      arm(); // every poll interval while it does not listen
      next.removeAllListeners('notification');
      void next.end().catch(() => undefined);
      if (!closed) reconnect = setTimeout(connect, 1_000).unref();
    };
    next.on('error', lost);
    next.on('end', lost);
    next.on('notification', () => {
      busyUntil = Date.now() + afterNoticeMs;
      look();
      arm();
    });
    next
      .connect()
      .then(() => next.query(`LISTEN ${pg.escapeIdentifier(options.channel)}`))
      .then(() => {
        if (client !== next) return;
        listening = true;
        look(); // what was appended while it was connecting
        arm();
      })
      .catch(lost);
  };
  arm();
  connect();

  return {
    close() {
      closed = true;
      clearTimeout(ticker);
      clearTimeout(reconnect);
      listening = false;
      const last = client;
      client = undefined;
      if (last) {
        last.removeAllListeners();
        last.on('error', () => undefined);
        void last.end().catch(() => undefined);
      }
    },
  };
};
