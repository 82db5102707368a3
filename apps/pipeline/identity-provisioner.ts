import type { Logger } from 'pino';
import { appDecider, appStreamName } from '../../domain/app/decider.ts';
import type { AppEvent } from '../../domain/app/events.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { MessengerConnector } from '../../infra/messenger/port.ts';
import { checkpoints } from '../services/topology.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';

/**
 * Gives each new app-messenger its bot identity: asks the messenger's connector to provision it,
 * then records the address (the app-messenger leaves `processing`). A failure is retried from
 * the checkpoint. A messenger whose identities an operator binds (Signal on signal-cli) is left
 * to `relay signal bind`.
 */
export const startIdentityProvisioner = (
  store: EventStore,
  connectors: ReadonlyMap<Messenger, MessengerConnector>,
  log: Logger,
): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(store, {
    name: checkpoints.identityProvisioner,
    filter: { categories: ['app'], types: ['AppMessengerAdded'] },
    log: log.child({ component: 'provisioner' }),
    batchSize: 20,
    handler: async (events) => {
      for (const recorded of events) {
        const event = recorded as unknown as Extract<AppEvent, { type: 'AppMessengerAdded' }>;
        const connector = connectors.get(event.data.messenger);
        if (!connector) throw new Error(`No connector for ${event.data.messenger}`);
        // An identity an operator binds (relay signal bind): nothing to do until then.
        if (!connector.provision) continue;
        const address = await connector.provision(event.data.appMessengerId);
        const result = await handleCommand(
          store,
          appStreamName(event.data.appId),
          appDecider,
          { type: 'ProvisionAppMessenger', data: { appMessengerId: event.data.appMessengerId, address, now: new Date() } },
          { actor: 'system:gateway', correlationId: recorded.id },
        );
        // A deleted app has nothing to provision any more.
        if (!result.ok && result.error.code !== 'not_found') throw new Error(result.error.message);
      }
    },
  });
