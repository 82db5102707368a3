import { describe, expect, it } from 'vitest';
import { HistoryChecker } from './history-checker.ts';

/** A history where every message went where it should: two inbound, two outbound. */
const cleanHistory = () => {
  const checker = new HistoryChecker();
  checker.injected('in #1');
  checker.injected('in #2');
  checker.popped('in #1', 'zero');
  checker.popped('in #2', 'one');
  checker.accepted('out-1', 'm1');
  checker.accepted('out-2', 'm2');
  checker.handed('out-1', { ok: false, via: 'zero' }); // a failed attempt, then the one that worked
  checker.handed('out-1', { ok: true, via: 'one' });
  checker.handed('out-2', { ok: true, via: 'zero' });
  return checker;
};

describe('the history checker', () => {
  it('passes a history where every message reached its end once, and counts it', () => {
    const verdict = cleanHistory().assertClean();
    expect(verdict.clean).toBe(true);
    expect(verdict.counts.inbound).toEqual({ injected: 2, injectedMaybe: 0, popped: 2, lost: 0, poppedTwice: 0, unknown: 0 });
    expect(verdict.counts.outbound).toEqual({ accepted: 2, refused: 0, sentMaybe: 0, delivered: 2, failedAttempts: 1, lost: 0, deliveredTwice: 0, refusedButDelivered: 0, unknown: 0 });
  });

  it('catches an inbound message injected and never popped, and an outbound one accepted and never delivered', () => {
    const checker = cleanHistory();
    checker.injected('in #3');
    checker.accepted('out-3', 'm3');
    checker.handed('out-3', { ok: false, via: 'zero' }); // attempted, never delivered
    const verdict = checker.verdict();
    expect(verdict.clean).toBe(false);
    expect(verdict.lost).toEqual(['inbound in #3', 'outbound out-3 (m3)']);
    expect(verdict.counts.inbound.lost).toBe(1);
    expect(verdict.counts.outbound.lost).toBe(1);
    expect(() => checker.assertClean('run')).toThrow(/lost \(2\): inbound in #3 \| outbound out-3 \(m3\)/);
  });

  it('catches a message popped twice', () => {
    const checker = cleanHistory();
    checker.popped('in #2', 'zero');
    const verdict = checker.verdict();
    expect(verdict.poppedTwice).toEqual(['in #2 (via one, zero)']);
    expect(verdict.counts.inbound.poppedTwice).toBe(1);
    expect(() => checker.assertClean()).toThrow(/popped twice \(1\): in #2/);
  });

  it('catches a message handed to the messenger twice, by one instance or by two', () => {
    const checker = cleanHistory();
    checker.handed('out-2', { ok: true, via: 'one', at: Date.UTC(2026, 0, 1, 12, 0, 0, 5) });
    const verdict = checker.verdict();
    expect(verdict.deliveredTwice).toHaveLength(1);
    expect(verdict.deliveredTwice[0]).toMatch(/^out-2 \(zero; one 12:00:00\.005\)$/);
    expect(verdict.counts.outbound.deliveredTwice).toBe(1);
    expect(verdict.counts.outbound.delivered).toBe(2);
    expect(() => checker.assertClean()).toThrow(/delivered twice \(1\): out-2/);
  });

  it('catches a refused send that reached the messenger, and messages it was never told of', () => {
    const checker = cleanHistory();
    checker.refused('out-4', 503);
    checker.handed('out-4', { ok: true });
    checker.handed('out-x', { ok: true });
    checker.popped('in #x');
    const verdict = checker.verdict();
    expect(verdict.refusedButDelivered).toEqual(['out-4 (refused with 503)']);
    expect(verdict.unknown).toEqual(['popped in #x', 'handed out-x']);
    expect(verdict.clean).toBe(false);
  });

  it('lets a message of unknown outcome be missing, but never twice', () => {
    const checker = cleanHistory();
    checker.injectedMaybe('in #4');
    checker.sentMaybe('out-5');
    checker.sentMaybe('out-6');
    checker.handed('out-6', { ok: true });
    expect(checker.verdict().clean).toBe(true);
    checker.handed('out-6', { ok: true });
    expect(checker.verdict().deliveredTwice).toHaveLength(1);
  });

  it('refuses a text told twice (a test whose texts are not unique could hide a duplicate)', () => {
    const checker = new HistoryChecker();
    checker.injected('in #1');
    expect(() => checker.injected('in #1')).toThrow(/unique/);
  });
});
