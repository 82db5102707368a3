import { heldRoles } from '../held-roles.ts';
import { alignedTicks } from './aligned-ticks.ts';
import type { RoleLeaseOptions, RoleLeases } from '../port.ts';

/** What role leases need from the log. Every call is synchronous and may throw BrokerUnavailableError. */
export interface RoleLeaseSource {
  /**
   * Takes (or renews) the lease of each of `roles` in `group` for `owner` that no other live member
   * holds, in one write; the roles `owner` holds now.
   */
  take(group: string, roles: readonly string[], owner: string, leaseMs: number): ReadonlySet<string>;
  /** Whether one of `roles` is held by no live member, `owner` included: a read, no write. */
  anyFree(group: string, roles: readonly string[], owner: string): boolean;
  release(group: string, owner: string): void;
}

export interface EmbeddedRoleLeaseSettings {
  readonly owner: string;
  readonly leaseMs: number;
}

/**
 * Role leases on the embedded log: a lease row per role (beside the consumer groups' leases), all of
 * a group's roles taken or renewed in one write at each multiple of a third of the lease (with every
 * other lease holder's renewal: aligned-ticks.ts). Between renewals, a read every second (or third
 * of the lease, if shorter) looks for roles no live member holds, and takes them at once: a
 * process that dies loses its leases at once (its pid is gone), and its roles are taken within a
 * second; one that hangs, once the lease ran out. A member that cannot reach the log gives its roles
 * up once its own leases would have run out.
 *
 * (Renewed every second, the leases were the most frequent write of an idle Relay: each one woke
 * the `-wal` watches of both threads, about ten looks each.)
 */
export const createEmbeddedRoleLeases = (source: RoleLeaseSource, options: RoleLeaseOptions, settings: EmbeddedRoleLeaseSettings): RoleLeases => {
  const { owner, leaseMs } = settings;
  const group = `roles:${options.group}`;
  const { report, tell } = heldRoles(options);
  let heldUntil = 0;
  let stopped = false;
  const failed = (error: unknown) => {
    report(error);
    // Another member may take the roles once these leases ran out: stop before that.
    if (Date.now() >= heldUntil - Math.floor(leaseMs / 3)) tell(new Set());
  };
  const renew = () => {
    if (stopped) return;
    const now = Date.now();
    try {
      tell(source.take(group, options.roles, owner, leaseMs));
      heldUntil = now + leaseMs;
    } catch (error) {
      failed(error);
    }
  };
  const look = () => {
    if (stopped) return;
    try {
      if (source.anyFree(group, options.roles, owner)) renew();
    } catch (error) {
      failed(error);
    }
  };
  const third = Math.max(10, Math.floor(leaseMs / 3));
  const renewals = alignedTicks(third, renew);
  const looks = setInterval(look, Math.min(1_000, third));
  looks.unref();
  queueMicrotask(renew);

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      renewals.stop();
      clearInterval(looks);
      tell(new Set());
      try {
        source.release(group, owner);
      } catch (error) {
        report(error); // the leases run out by themselves
      }
    },
  };
};
