import type { RoleLeaseOptions } from './port.ts';

/**
 * What a role-lease adapter tells its caller (port.ts, RoleLeaseOptions): the roles held now, each
 * time that changes (a set equal to the last is not told again), and errors. A listener that
 * throws is reported, and stops nothing.
 */
export const heldRoles = (options: Pick<RoleLeaseOptions, 'onChange' | 'onError'>) => {
  let held = new Set<string>();
  const report = (error: unknown) => {
    try {
      options.onError?.(error);
    } catch {
      // an onError that throws must not stop the leases
    }
  };
  const tell = (next: ReadonlySet<string>) => {
    if (next.size === held.size && [...next].every((role) => held.has(role))) return;
    held = new Set(next);
    try {
      options.onChange(new Set(next));
    } catch (error) {
      report(error);
    }
  };
  return { report, tell, held: (): ReadonlySet<string> => held };
};
