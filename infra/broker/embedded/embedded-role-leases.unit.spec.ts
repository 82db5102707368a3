import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createEmbeddedRoleLeases, type RoleLeaseSource } from './embedded-role-leases.ts';

/** A log of one group's roles as the embedded log keeps them: each role's owner (no expiry: these tests stay inside the lease). */
const fakeLog = () => {
  const owners = new Map<string, string>();
  const calls = { takes: 0, looks: 0 };
  const source: RoleLeaseSource = {
    take: (_group, roles, owner) => {
      calls.takes++;
      for (const role of roles) if (!owners.has(role)) owners.set(role, owner);
      return new Set(roles.filter((role) => owners.get(role) === owner));
    },
    anyFree: (_group, roles) => {
      calls.looks++;
      return roles.some((role) => !owners.has(role));
    },
    release: (_group, owner) => {
      for (const [role, held] of owners) if (held === owner) owners.delete(role);
    },
  };
  return { owners, calls, source };
};

describe('embedded role leases (renewed at a third of the lease, free roles looked for every second)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => void vi.useRealTimers());

  it('writes at the start and then once per third of the lease, not at every look', async () => {
    const log = fakeLog();
    const told: Array<ReadonlySet<string>> = [];
    const leases = createEmbeddedRoleLeases(log.source, { group: 'g', roles: ['a', 'b'], onChange: (held) => told.push(held) }, { owner: 'me', leaseMs: 9_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(told).toEqual([new Set(['a', 'b'])]);
    await vi.advanceTimersByTimeAsync(30_000);
    // 1 take at the start, then at 1,002,000 (the first multiple of 3 s at least 1.5 s away), 1,005,000 … 1,029,000.
    expect(log.calls.takes).toBe(1 + 10);
    expect(log.calls.looks).toBe(30);
    await leases.stop();
    expect(told.at(-1)).toEqual(new Set());
  });

  it('takes a role freed by another member at the next look, within a second', async () => {
    const log = fakeLog();
    log.owners.set('b', 'other');
    let held: ReadonlySet<string> = new Set();
    const leases = createEmbeddedRoleLeases(log.source, { group: 'g', roles: ['a', 'b'], onChange: (h) => (held = h) }, { owner: 'me', leaseMs: 9_000 });
    await vi.advanceTimersByTimeAsync(1_500);
    expect(held).toEqual(new Set(['a']));
    const takes = log.calls.takes;
    log.owners.delete('b'); // the other member's process ended
    await vi.advanceTimersByTimeAsync(1_000);
    expect(held).toEqual(new Set(['a', 'b']));
    expect(log.calls.takes).toBe(takes + 1);
    await leases.stop();
  });

  it('a member that cannot reach the log gives its roles up before its leases can run out', async () => {
    const log = fakeLog();
    let held: ReadonlySet<string> = new Set();
    const errors: unknown[] = [];
    const leases = createEmbeddedRoleLeases(log.source, { group: 'g', roles: ['a'], onChange: (h) => (held = h), onError: (e) => errors.push(e) }, { owner: 'me', leaseMs: 9_000 });
    await vi.advanceTimersByTimeAsync(0);
    expect(held).toEqual(new Set(['a']));
    const broken = () => {
      throw new Error('SQLITE_IOERR');
    };
    log.source.take = broken;
    log.source.anyFree = broken;
    // Taken at 1,000,000: the lease runs out at 1,009,000; given up once within a third of it (1,006,000).
    await vi.advanceTimersByTimeAsync(5_900);
    expect(held).toEqual(new Set(['a']));
    await vi.advanceTimersByTimeAsync(1_100);
    expect(held).toEqual(new Set());
    expect(errors.length).toBeGreaterThan(0);
    await leases.stop();
  });
});
