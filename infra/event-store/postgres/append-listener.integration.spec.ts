import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { noPostgres, POSTGRES_URL, postgresUnreachable } from '../../../test/support/postgres-server.ts';
import { listenForAppends } from './append-listener.ts';

const reason = await postgresUnreachable();

if (reason !== undefined) {
  noPostgres('PostgreSQL append listener', reason);
} else {
  describe('PostgreSQL append listener', () => {
    const closing: Array<() => unknown> = [];
    afterEach(async () => {
      for (const close of closing.splice(0)) await close();
      vi.restoreAllMocks();
    });

    const listen = async (pollIntervalMs: number) => {
      const channel = `relay_test_${randomBytes(6).toString('hex')}`;
      const polls: number[] = [];
      const listener = listenForAppends({ connectionString: POSTGRES_URL, channel, pollIntervalMs, quietPollMs: 1_000, afterNoticeMs: 500 }, () => polls.push(Date.now()));
      closing.push(() => listener.close());
      // It looks once it listens (what was appended while it connected).
      await vi.waitFor(() => expect(polls.length).toBeGreaterThan(0), { timeout: 10_000, interval: 10 });
      return { channel, polls };
    };

    it('while quiet it looks about once a second, and no timer wakes it in between (an interval at the poll interval woke each thread 40 times a second)', async () => {
      // Every timer callback the listener's thread runs, counted from before the listener exists.
      const { setTimeout: realTimeout, setInterval: realInterval } = globalThis;
      let fired = 0;
      const counted = (callback: (...args: unknown[]) => void) => (...args: unknown[]) => {
        fired += 1;
        callback(...args);
      };
      vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: (...args: unknown[]) => void, delay?: number, ...args: unknown[]) => realTimeout(counted(callback), delay, ...args)) as typeof setTimeout);
      vi.spyOn(globalThis, 'setInterval').mockImplementation(((callback: (...args: unknown[]) => void, delay?: number, ...args: unknown[]) => realInterval(counted(callback), delay, ...args)) as typeof setInterval);
      const { polls } = await listen(25);
      fired = 0;
      const before = polls.length;
      // 2.1 s of quiet, waited on a timer that is not counted.
      await new Promise((resolve) => realTimeout(resolve, 2_100));
      const looks = polls.slice(before);
      expect(looks.length).toBeGreaterThanOrEqual(1);
      expect(looks.length).toBeLessThanOrEqual(3);
      for (let i = 1; i < looks.length; i++) expect(looks[i]! - looks[i - 1]!).toBeGreaterThanOrEqual(990);
      // One timer per look (about two), where an interval at 25 ms ran ~84 times.
      expect(fired).toBeLessThanOrEqual(4);
    });

    it('after a notification it looks at once, then every poll interval for a moment, then once a second again', async () => {
      const { channel, polls } = await listen(25);
      const notifier = new pg.Client({ connectionString: POSTGRES_URL });
      await notifier.connect();
      closing.push(() => notifier.end());
      const before = polls.length;
      const sent = Date.now();
      await notifier.query(`SELECT pg_notify($1, '')`, [channel]);
      await vi.waitFor(() => expect(polls.length).toBeGreaterThan(before), { timeout: 5_000, interval: 5 });
      // The moment of fast looks (500 ms at 25 ms): well over a handful, then quiet.
      await vi.waitFor(() => expect(polls.filter((at) => at > sent + 600).length).toBeGreaterThan(0), { timeout: 5_000, interval: 50 });
      const fastLooks = polls.filter((at) => at >= sent && at <= sent + 550).length;
      expect(fastLooks).toBeGreaterThanOrEqual(8);
      const quietStart = polls.filter((at) => at > sent + 600)[0]!;
      await vi.waitFor(() => expect(polls.filter((at) => at > quietStart).length).toBeGreaterThan(0), { timeout: 5_000, interval: 50 });
      expect(polls.filter((at) => at > quietStart)[0]! - quietStart).toBeGreaterThanOrEqual(990);
    });
  });
}
