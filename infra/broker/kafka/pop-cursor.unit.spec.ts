import { describe, expect, it } from 'vitest';
import { loadCursor, PopCursor, RECENT_IDS, type CursorEntry, type PopClaim, type PopCursorStore } from './pop-cursor.ts';

const claim = (partition: number, popped: number[], skipped: number[] = [], ids: string[] = []): PopClaim => ({
  partitions: [{ partition, popped: popped.map(BigInt), skipped: skipped.map(BigInt) }],
  ids,
});

describe('PopCursor', () => {
  it('starts with nothing popped', () => {
    const cursor = new PopCursor();
    expect(cursor.version).toBe(0n);
    expect(cursor.floor(0)).toBe(0n);
    expect(cursor.isPopped(0, 0n)).toBe(false);
  });

  it('moves the floor over contiguous popped offsets and remembers the version', () => {
    const cursor = new PopCursor();
    cursor.apply(claim(0, [0, 1, 2]), 1n);
    expect(cursor.floor(0)).toBe(3n);
    expect(cursor.poppedAboveFloor(0)).toBe(0);
    expect(cursor.version).toBe(1n);
    expect([0n, 1n, 2n].every((o) => cursor.isPopped(0, o))).toBe(true);
    expect(cursor.isPopped(0, 3n)).toBe(false);
    expect(cursor.isPopped(1, 0n)).toBe(false); // partitions are apart
  });

  it('a record left behind holds the floor; offsets above it are popped one by one', () => {
    const cursor = new PopCursor();
    cursor.apply(claim(0, [1, 2]), 1n); // offset 0 not due yet
    expect(cursor.floor(0)).toBe(0n);
    expect(cursor.poppedAboveFloor(0)).toBe(2);
    expect(cursor.isPopped(0, 0n)).toBe(false);
    expect(cursor.isPopped(0, 2n)).toBe(true);
    cursor.apply(claim(0, [0]), 2n);
    expect(cursor.floor(0)).toBe(3n);
    expect(cursor.poppedAboveFloor(0)).toBe(0);
  });

  it('skipped offsets count as consumed; popped ids are remembered', () => {
    const cursor = new PopCursor();
    cursor.apply(claim(0, [0], [1], ['m1']), 1n);
    expect(cursor.floor(0)).toBe(2n);
    expect(cursor.wasPopped('m1')).toBe(true);
    expect(cursor.wasPopped('m2')).toBe(false);
  });

  it(`remembers the last ${RECENT_IDS} ids only`, () => {
    const cursor = new PopCursor();
    const ids = Array.from({ length: RECENT_IDS + 5 }, (_, i) => `m${i}`);
    cursor.apply(claim(0, ids.map((_, i) => i), [], ids), 1n);
    expect(cursor.wasPopped('m0')).toBe(false);
    expect(cursor.wasPopped('m4')).toBe(false);
    expect(cursor.wasPopped('m5')).toBe(true);
    expect(cursor.wasPopped(`m${RECENT_IDS + 4}`)).toBe(true);
  });

  it('counts popped offsets from a point above the floor (records below it went with the retention)', () => {
    const cursor = new PopCursor();
    cursor.apply(claim(0, [2, 5, 9]), 1n);
    expect(cursor.floor(0)).toBe(0n);
    expect(cursor.poppedFrom(0, 0n)).toBe(3);
    expect(cursor.poppedFrom(0, 5n)).toBe(2);
    expect(cursor.poppedFrom(0, 10n)).toBe(0);
    expect(cursor.poppedFrom(1, 0n)).toBe(0);
  });

  it('a reset (the topic was deleted) voids the claims before it', async () => {
    const entries: CursorEntry[] = [
      { version: 1n, claim: claim(0, [0, 1], [], ['m1']) },
      { version: 2n, reset: true },
      { version: 3n, claim: claim(0, [0]) },
    ];
    const store: PopCursorStore = {
      load: async () => ({ version: 3n, claims: entries }),
      append: async () => 'conflict',
      reset: async () => {},
    };
    const cursor = await loadCursor(store, 'inbound.a');
    expect(cursor.version).toBe(3n);
    expect(cursor.resetAt).toBe(2n);
    expect(cursor.floor(0)).toBe(1n);
    expect(cursor.wasPopped('m1')).toBe(false);
    const untouched = await loadCursor({ ...store, load: async () => ({ version: 1n, claims: entries.slice(0, 1) }) }, 'inbound.a');
    expect([untouched.resetAt, untouched.floor(0), untouched.wasPopped('m1')]).toEqual([0n, 2n, true]);
  });
});
