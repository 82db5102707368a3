import { heldRoles } from '../held-roles.ts';
import type { RoleLeaseOptions, RoleLeases } from '../port.ts';

/** What role leases need from the log. Every call is synchronous and may throw BrokerUnavailableError. */
export interface RoleLeaseSource {
  /**
   * Takes (or renews) the lease of each of `roles` in `group` for `owner` that no other live member
   * holds, in one write; the roles `owner` holds now.
   */
  take(group: string, roles: readonly string[], owner: string, leaseMs: number): ReadonlySet<string>;
  release(group: string, owner: string): void;
}

export interface EmbeddedRoleLeaseSettings {
  readonly owner: string;
  readonly leaseMs: number;
}

/**
 * Role leases on the embedded log: a lease row per role (beside the consumer groups' leases), all of
 * a group's roles taken or renewed in one write every third of the lease. A process that dies
 * loses its leases at once (its pid is gone); one that hangs, once the lease ran out. A member that cannot reach the log
 * gives its roles up once its own leases would have run out.
 */
export const createEmbeddedRoleLeases = (source: RoleLeaseSource, options: RoleLeaseOptions, settings: EmbeddedRoleLeaseSettings): RoleLeases => {
  const { owner, leaseMs } = settings;
  const group = `roles:${options.group}`;
  const { report, tell } = heldRoles(options);
  let heldUntil = 0;
  let stopped = false;
  const round = () => {
    if (stopped) return;
    const now = Date.now();
    try {
      tell(source.take(group, options.roles, owner, leaseMs));
      heldUntil = now + leaseMs;
    } catch (error) {
      report(error);
      // Another member may take the roles once these leases ran out: stop before that.
      if (Date.now() >= heldUntil - Math.floor(leaseMs / 3)) tell(new Set());
    }
  };
  const timer = setInterval(round, Math.max(10, Math.min(1_000, Math.floor(leaseMs / 3))));
  timer.unref();
  queueMicrotask(round);

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      tell(new Set());
      try {
        source.release(group, owner);
      } catch (error) {
        report(error); // the leases run out by themselves
      }
    },
  };
};
