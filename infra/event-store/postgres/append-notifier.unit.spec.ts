import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { appendNotifier } from './append-notifier.ts';

/** A notification's round trip that the test ends by hand. */
const sends = () => {
  const pending: Array<() => void> = [];
  let sent = 0;
  const send = () => {
    sent++;
    return new Promise<void>((resolve) => pending.push(resolve));
  };
  return { send, count: () => sent, answer: () => pending.shift()?.() };
};

describe('appendNotifier (other processes told of appends, outside the appends\' transactions)', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('tells the first append at once, and the appends during its round trip by one more, after it', async () => {
    const s = sends();
    const notifier = appendNotifier(s.send, 25);
    notifier.appended();
    expect(s.count()).toBe(1);
    notifier.appended();
    notifier.appended();
    expect(s.count()).toBe(1); // one in flight: it may have left before these commits, so they are owed
    await vi.advanceTimersByTimeAsync(30);
    expect(s.count()).toBe(1);
    s.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(s.count()).toBe(2);
    s.answer();
    await vi.advanceTimersByTimeAsync(100);
    expect(s.count()).toBe(2); // nothing owed
  });

  it('sends at most one notification per interval under a stream of appends', async () => {
    const s = sends();
    const notifier = appendNotifier(s.send, 25);
    for (let ms = 0; ms < 1_000; ms++) {
      notifier.appended();
      s.answer();
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(s.count()).toBeGreaterThanOrEqual(39);
    expect(s.count()).toBeLessThanOrEqual(41);
  });

  it('a failed notification is not retried, and the next append is told', async () => {
    let calls = 0;
    const notifier = appendNotifier(() => (calls++, Promise.reject(new Error('connection lost'))), 25);
    notifier.appended();
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(1);
    notifier.appended();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(2);
  });

  it('flush sends what is owed and waits for it', async () => {
    const s = sends();
    const notifier = appendNotifier(s.send, 1_000);
    notifier.appended();
    s.answer();
    await vi.advanceTimersByTimeAsync(0);
    notifier.appended(); // within the interval: waits for its timer
    expect(s.count()).toBe(1);
    let flushed = false;
    const flushing = notifier.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(s.count()).toBe(2);
    expect(flushed).toBe(false);
    s.answer();
    await flushing;
    expect(flushed).toBe(true);
  });
});
