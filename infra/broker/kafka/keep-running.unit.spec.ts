import type { Consumer } from 'kafkajs';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keepRunning } from './keep-running.ts';

const log = pino({ level: 'silent' });

/** A consumer whose `connect` fails `refusals` times before it succeeds. */
const consumerRefusing = (refusals: number) => {
  let left = refusals;
  const connect = vi.fn(async () => {
    if (left-- > 0) throw new Error('connect ECONNREFUSED');
  });
  return { consumer: { connect } as unknown as Consumer, connect };
};

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('keepRunning', () => {
  it('runs the consumer again after a crash kafkajs does not restart from, once it connects', async () => {
    const { consumer, connect } = consumerRefusing(0);
    const run = vi.fn(async () => undefined);
    const kept = keepRunning(consumer, run, { stopping: () => false, log, context: {}, initialDelayMs: 1_000 });
    kept.start();
    expect(run).toHaveBeenCalledTimes(1);
    kept.crashed();
    await vi.advanceTimersByTimeAsync(999);
    expect(connect).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(connect).toHaveBeenCalledTimes(1);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('tries again, doubling the pause up to its ceiling, while the broker refuses', async () => {
    const { consumer, connect } = consumerRefusing(3);
    const run = vi.fn(async () => undefined);
    const kept = keepRunning(consumer, run, { stopping: () => false, log, context: {}, initialDelayMs: 1_000, maxDelayMs: 3_000 });
    kept.start();
    kept.crashed();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(connect).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(connect).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(connect).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(connect).toHaveBeenCalledTimes(3);
    expect(run).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(connect).toHaveBeenCalledTimes(4);
    expect(run).toHaveBeenCalledTimes(2);
    // Started again: the next crash waits the first pause again.
    kept.crashed();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(run).toHaveBeenCalledTimes(3);
  });

  it('does not start again once its owner stops, and a crash reported twice schedules one restart', async () => {
    const { consumer, connect } = consumerRefusing(0);
    let stopping = false;
    const run = vi.fn(async () => undefined);
    const kept = keepRunning(consumer, run, { stopping: () => stopping, log, context: {}, initialDelayMs: 1_000 });
    kept.start();
    kept.crashed();
    kept.crashed();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(run).toHaveBeenCalledTimes(2);
    kept.crashed();
    stopping = true;
    kept.cancel();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(connect).toHaveBeenCalledTimes(1);
    expect(run).toHaveBeenCalledTimes(2);
  });
});
