import type Database from 'better-sqlite3';
import type { Claim } from './embedded-consumer.ts';
import type { LeaseRow } from './schema.ts';
import type { Statements } from './statements.ts';

/** The lease rows' writes: a consumer group member's claim on a topic, and a member's roles. Each is synchronous and may throw SQLite's errors. */
export interface LeaseWrites {
  claim(groupId: string, topic: string, owner: string, leaseMs: number): Claim;
  /** Takes (or renews) each of `roles` that no other live member holds, in one write; the roles `owner` holds now. */
  takeRoles(group: string, roles: readonly string[], owner: string, leaseMs: number): ReadonlySet<string>;
  /** Whether one of `roles` is held by no live member, `owner` included (a read only). */
  anyRoleFree(group: string, roles: readonly string[], owner: string): boolean;
}

export const createLeaseWrites = (db: Database.Database, s: Statements): LeaseWrites => {
  const claimTx = db.transaction((groupId: string, topic: string, owner: string, lease: number): Claim => {
    const now = Date.now();
    const current = s.lease.get(groupId, topic);
    if (current !== undefined && heldByOther(current, owner, now)) return { held: false, retryAt: Number(current.expires_at) };
    s.takeLease.run(groupId, topic, owner, now + lease);
    s.ensureTopic.run(topic);
    s.initGroupOffset.run(groupId, topic, s.earliestOffset.get({ topic }) ?? 0n);
    return { held: true, offset: s.groupOffset.get(groupId, topic) ?? 0n };
  });

  const roleLeaseTx = db.transaction((group: string, roles: readonly string[], owner: string, lease: number): ReadonlySet<string> => {
    const now = Date.now();
    const held = new Set<string>();
    for (const role of roles) {
      const current = s.lease.get(group, role);
      if (current !== undefined && heldByOther(current, owner, now)) continue;
      s.takeLease.run(group, role, owner, now + lease);
      held.add(role);
    }
    return held;
  });

  return {
    claim: (groupId, topic, owner, lease) => {
      // A plain read first: a member waiting for the lease of a live one takes no write lock.
      const current = s.lease.get(groupId, topic);
      if (current !== undefined && heldByOther(current, owner, Date.now())) return { held: false, retryAt: Number(current.expires_at) };
      return claimTx.immediate(groupId, topic, owner, lease);
    },
    takeRoles: (group, roles, owner, lease) => roleLeaseTx.immediate(group, roles, owner, lease),
    anyRoleFree: (group, roles, owner) => {
      const now = Date.now();
      return roles.some((role) => {
        const current = s.lease.get(group, role);
        if (current === undefined) return true;
        // Free unless another live member holds it, or this one does and its lease still runs.
        return current.owner === owner ? Number(current.expires_at) <= now : !heldByOther(current, owner, now);
      });
    },
  };
};

/** A lease blocks others while it runs, unless its owner's process is gone (a crash frees it at once). */
const heldByOther = (lease: LeaseRow, owner: string, now: number): boolean =>
  lease.owner !== owner && Number(lease.expires_at) > now && processAlive(Number.parseInt(lease.owner, 10));

const processAlive = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};
