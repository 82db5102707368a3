import type { Logger } from 'pino';
import type { Broker } from '../../infra/broker/port.ts';
import { Backoff } from '../../infra/net/backoff.ts';

/** Something a leased role started, and stops when the role moves elsewhere. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** A part of the pipeline that one process of a deployment runs at a time. */
export interface LeasedRole {
  readonly name: string;
  start(): Promise<Stoppable>;
}

export interface LeasedRoles {
  /** The roles running in this process now. */
  running(): string[];
  /** Gives the roles up (stopping those running here) and leaves the lease group. */
  stop(): Promise<void>;
}

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5_000;

/**
 * Runs the roles this process holds a lease on (Broker.leaseRoles), and only those: a role is
 * started when its lease is gained and stopped when it is lost, one change at a time, so that a
 * role is never started before its earlier run here has stopped. A role whose start fails is tried
 * again (500 ms doubling to 5 s) while its lease is held.
 */
export const runLeasedRoles = async (
  broker: Broker,
  group: string,
  roles: readonly LeasedRole[],
  log: Logger,
  /** Told the roles running here each time one started or stopped. */
  onRunning: (running: readonly string[]) => void = () => undefined,
): Promise<LeasedRoles> => {
  const byName = new Map(roles.map((role) => [role.name, role]));
  const running = new Map<string, Stoppable>();
  let wanted = new Set<string>();
  let settling: Promise<void> = Promise.resolve();
  let stopped = false;
  const retries = new Map<string, { timer: NodeJS.Timeout | undefined; backoff: Backoff }>();

  const settle = (): Promise<void> =>
    (settling = settling.then(async () => {
      for (const [name, role] of running) {
        if (wanted.has(name) && !stopped) continue;
        running.delete(name);
        onRunning([...running.keys()]);
        await role.stop().catch((error: unknown) => log.error({ err: error, role: name }, 'leased role: stop failed'));
        log.info({ role: name, group }, 'leased role stopped here');
      }
      for (const name of wanted) {
        if (stopped || running.has(name)) continue;
        const retry = retries.get(name);
        if (retry?.timer !== undefined) continue; // waiting out a failed start
        try {
          running.set(name, await byName.get(name)!.start());
          onRunning([...running.keys()]);
          retries.delete(name);
          log.info({ role: name, group }, 'leased role started here');
        } catch (error) {
          const entry = retry ?? { timer: undefined as NodeJS.Timeout | undefined, backoff: new Backoff(FIRST_RETRY_MS, MAX_RETRY_MS) };
          const delayMs = entry.backoff.delay();
          log.error({ err: error, role: name, retryInMs: delayMs }, 'leased role: start failed; tried again while its lease is held');
          entry.timer = setTimeout(() => {
            entry.timer = undefined;
            void settle();
          }, delayMs);
          entry.timer.unref();
          retries.set(name, entry);
        }
      }
    }));

  onRunning([]);
  const leases = await broker.leaseRoles({
    group,
    roles: roles.map((role) => role.name),
    onChange: (held) => {
      wanted = new Set([...held].filter((name) => byName.has(name)));
      for (const [name, retry] of retries) if (!wanted.has(name)) (clearTimeout(retry.timer), retries.delete(name));
      void settle();
    },
    onError: (error) => log.warn({ err: error, group }, 'role leases: broker operation failed'),
  });

  return {
    running: () => [...running.keys()],
    async stop() {
      stopped = true;
      for (const retry of retries.values()) clearTimeout(retry.timer);
      retries.clear();
      await settle();
      await leases.stop();
    },
  };
};
