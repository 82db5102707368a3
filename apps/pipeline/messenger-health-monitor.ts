import type { Logger } from 'pino';
import { appDecider, appStreamName } from '../../domain/app/decider.ts';
import type { AppMessengerHealth } from '../../domain/app/events.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { DaemonHealth, MessengerConnector } from '../../infra/messenger/port.ts';
import type { AppMessengerView, AppsProjection } from '../../projections/apps/apps-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { startPeriodicRound, type PeriodicRound } from './periodic-round.ts';

/** What a daemon's answer means for one app-messenger on it. */
export const healthOf = (daemon: DaemonHealth, appMessenger: Pick<AppMessengerView, 'address'>): { health: AppMessengerHealth; reason: string | null } => {
  if (!daemon.reachable) return { health: 'daemon-unreachable', reason: daemon.reason };
  // Not bound (Signal: relay signal bind|link) or not provisioned yet: it has no identity to send from.
  if (appMessenger.address === null) return { health: 'account-missing', reason: 'No bot identity of the daemon is bound to it yet' };
  if (daemon.identities && appMessenger.address !== null && !daemon.identities.has(appMessenger.address))
    return { health: 'account-missing', reason: "The daemon no longer has the bot's account (unlinked or removed)" };
  return { health: 'ok', reason: null };
};

/** `check()`: one round now (tests, start-up). */
export type HealthMonitor = PeriodicRound;

/**
 * Asks each messenger daemon every `intervalMs` whether it answers and which accounts it has, and
 * records each app-messenger's health as an event when it changes (one not bound or provisioned
 * yet is `account-missing`, or `daemon-unreachable` while its daemon is) (`AppMessengerHealthChanged`:
 * the dashboard API shows it, `/metrics` counts it). A bad health is recorded once seen twice in a
 * row, so that one slow answer does not flap it; recovery is recorded at once.
 */
export const startMessengerHealthMonitor = (deps: {
  readonly store: EventStore;
  readonly apps: AppsProjection;
  readonly connectors: ReadonlyMap<Messenger, MessengerConnector>;
  readonly intervalMs: number;
  readonly log: Logger;
}): HealthMonitor => {
  const seenOnce = new Map<string, AppMessengerHealth>();

  const record = async (appMessenger: AppMessengerView, health: AppMessengerHealth, reason: string | null) => {
    const result = await handleCommand(
      deps.store,
      appStreamName(appMessenger.appId),
      appDecider,
      { type: 'RecordAppMessengerHealth', data: { appMessengerId: appMessenger.id, health, reason, now: new Date() } },
      { actor: 'system:health' },
    );
    if (result.ok && result.events.length > 0) deps.log.warn({ appMessengerId: appMessenger.id, messenger: appMessenger.messenger, health, reason }, 'app-messenger health changed');
  };

  const round = async () => {
    for (const [messenger, connector] of deps.connectors) {
      if (!connector.checkHealth) continue;
      const daemon = await connector.checkHealth();
      for (const appMessenger of [...deps.apps.allAppMessengers()]) {
        if (appMessenger.messenger !== messenger) continue;
        const { health, reason } = healthOf(daemon, appMessenger);
        if (health === appMessenger.health) {
          seenOnce.delete(appMessenger.id);
          continue;
        }
        if (health !== 'ok' && seenOnce.get(appMessenger.id) !== health) {
          seenOnce.set(appMessenger.id, health);
          continue;
        }
        seenOnce.delete(appMessenger.id);
        await record(appMessenger, health, reason);
      }
    }
  };

  return startPeriodicRound(round, deps.intervalMs, deps.log, 'messenger health check failed; trying again next round');
};
