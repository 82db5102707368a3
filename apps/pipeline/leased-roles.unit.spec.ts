import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Broker, RoleLeaseOptions } from '../../infra/broker/port.ts';
import { eventually } from '../../test/support/eventually.ts';
import { runLeasedRoles, type LeasedRole } from './leased-roles.ts';

/** A broker whose role leases the test grants and takes back by hand. */
const leasingBroker = () => {
  let options: RoleLeaseOptions | undefined;
  let stopped = false;
  const broker = {
    leaseRoles: async (given: RoleLeaseOptions) => {
      options = given;
      return { stop: async () => void ((stopped = true), given.onChange(new Set())) };
    },
  } as unknown as Broker;
  return { broker, grant: (...roles: string[]) => options!.onChange(new Set(roles)), stopped: () => stopped };
};

const log = pino({ level: 'silent' });

describe('leased roles', () => {
  it('runs a role only while its lease is held, and never starts it again before its earlier run stopped', async () => {
    const { broker, grant, stopped } = leasingBroker();
    const journal: string[] = [];
    let stopping: (() => void) | undefined;
    const role = (name: string): LeasedRole => ({
      name,
      start: async () => {
        journal.push(`start ${name}`);
        return {
          stop: () =>
            new Promise<void>((resolve) => {
              journal.push(`stopping ${name}`);
              stopping = () => (journal.push(`stopped ${name}`), resolve());
            }),
        };
      },
    });
    const roles = await runLeasedRoles(broker, 'delivery', [role('a'), role('b')], log);
    expect(journal).toEqual([]);
    grant('a', 'b');
    await eventually(() => expect(roles.running().sort()).toEqual(['a', 'b']));
    grant('b');
    await eventually(() => expect(journal.at(-1)).toBe('stopping a'));
    grant('a', 'b'); // gained back while its stop is still in flight
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(journal.at(-1)).toBe('stopping a');
    stopping!();
    await eventually(() => expect(journal.slice(-3)).toEqual(['stopping a', 'stopped a', 'start a']));
    const stoppedAll = roles.stop();
    await eventually(() => expect(journal.at(-1)).toMatch(/^stopping /));
    stopping!();
    await eventually(() => expect(journal.at(-1)).toMatch(/^stopping /));
    stopping!();
    await stoppedAll;
    expect(roles.running()).toEqual([]);
    expect(stopped()).toBe(true);
  });

  it('tries a role whose start failed again while its lease is held, and not once it is lost', async () => {
    const { broker, grant } = leasingBroker();
    let tries = 0;
    const roles = await runLeasedRoles(
      broker,
      'gateway',
      [
        {
          name: 'flaky',
          start: async () => {
            if (++tries < 3) throw new Error('store away');
            return { stop: async () => undefined };
          },
        },
      ],
      log,
    );
    grant('flaky');
    await eventually(() => expect(roles.running()).toEqual(['flaky']), 10_000);
    expect(tries).toBe(3);
    grant();
    await eventually(() => expect(roles.running()).toEqual([]));
    await roles.stop();
  });

  it('ignores roles it was not given', async () => {
    const { broker, grant } = leasingBroker();
    const roles = await runLeasedRoles(broker, 'gateway', [{ name: 'known', start: async () => ({ stop: async () => undefined }) }], log);
    grant('known', 'unknown');
    await eventually(() => expect(roles.running()).toEqual(['known']));
    await roles.stop();
  });
});
