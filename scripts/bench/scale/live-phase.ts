/**
 * The part of a scale point written in real time, through Relay's own context (apps/boot/runtime.ts
 * `openContext`, as `relay simulate inbound` opens it):
 * - the inbound queue of every new app, made as POST /apps makes it (`ensureTopics`);
 * - the groups: a member added to each planned app-messenger's group as POST /group/members/add
 *   records it (apps/account/group-changes.ts: the group's own data key, the contact sealed), then
 *   carried out by Relay's group administrator on the simulator connectors (the group made in
 *   simulator.db, `GroupCreated`, `GroupMembersSynced`, `GroupMemberAdded`);
 * - the checkpoints of the pipeline's subscriptions moved to the head: the history is what a Relay
 *   that ran all along had already published, delivered, alerted on and provisioned;
 * - then the messages waiting for a poll, received as the gateway receives what a contact wrote
 *   (apps/pipeline/inbound-receiver.ts: the app's one-second sealing window): the running Relay's
 *   publisher then puts them on their apps' inbound queues.
 */
import { randomUUID } from 'node:crypto';
import { groupDecider, groupStreamName } from '../../../domain/group/decider.ts';
import { MESSENGERS, type Messenger } from '../../../domain/shared/messengers.ts';
import { groupKeyOf, sealGroupField, type GroupKey } from '../../../apps/commands/group-seal.ts';
import { handleCommand } from '../../../apps/commands/handle-command.ts';
import type { Config } from '../../../apps/services/config.ts';
import { closeContext, openContext } from '../../../apps/boot/runtime.ts';
import { startGroupAdministrator } from '../../../apps/pipeline/group-administrator.ts';
import { inboundDepsOf, receiveInbound } from '../../../apps/pipeline/inbound-receiver.ts';
import { checkpoints, topics } from '../../../apps/services/topology.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import type { MessengerConnector } from '../../../infra/messenger/port.ts';
import { SimulatorConnector } from '../../../infra/messenger/simulator/simulator-connector.ts';
import { SimulatorStore } from '../../../infra/messenger/simulator/simulator-store.ts';
import { createLogger } from '../../../apps/services/logger.ts';
import { contactOf } from './history.ts';
import type { AppPlan } from './plan.ts';
import type { BuiltApp } from './population.ts';
import { inPool } from './writer.ts';

export interface LivePhaseResult {
  readonly groups: number;
  readonly waiting: number;
  /** The head the checkpoints were moved to (before the waiting messages). */
  readonly checkpointHead: bigint;
}

/** The pipeline's subscriptions, whose checkpoints a Relay that ran all along would have at the head. */
export const pipelineCheckpoints = (config: Config): string[] => [
  checkpoints.queuePublisher,
  checkpoints.identityProvisioner,
  checkpoints.subscriptionKeeper,
  checkpoints.alertDispatcher,
  ...MESSENGERS.map(checkpoints.groupAdministrator),
  ...(config.BROKER === 'kafka' ? [checkpoints.eventTopics] : []),
];

export const writeLivePhase = async (config: Config, apps: ReadonlyArray<{ plan: AppPlan; built: BuiltApp }>, concurrency: number): Promise<LivePhaseResult> => {
  const log = createLogger('warn');
  const ctx = await openContext(config, log, { processMetrics: false, brokerMaintenance: false });
  const simulator = new SimulatorStore(config.dataDir);
  try {
    await ctx.projections.catchUp();
    for (let i = 0; i < apps.length; i += 200) await ctx.broker.ensureTopics(apps.slice(i, i + 200).map((a) => topics.inbound(a.built.appId)));

    const grouped = apps.filter((a) => a.plan.group !== undefined);
    await inPool(grouped, concurrency, async ({ plan, built }) => {
      const messenger = plan.group!;
      const appMessengerId = built.messengers[messenger].id;
      let key: GroupKey | undefined;
      const result = await handleCommand(
        ctx.store,
        groupStreamName(appMessengerId),
        groupDecider,
        async (state) => {
          key = await groupKeyOf(ctx.store.keys, ctx.sealer, state, built.appId, appMessengerId);
          return {
            type: 'RequestGroupChange' as const,
            data: {
              appId: built.appId,
              appMessengerId,
              messenger,
              requestId: newId.groupRequest(),
              operation: 'add-member' as const,
              sealed: sealGroupField(ctx.sealer, key.raw, appMessengerId, 'contact', contactOf(messenger, plan.index)),
              keyId: key.id,
              groupName: `App ${plan.index}`,
              now: new Date(),
            },
          };
        },
        { actor: `user:${built.userId}`, correlationId: randomUUID() },
        { keys: () => key?.changes },
      );
      if (!result.ok) throw new Error(`group request: ${result.error.message}`);
    });
    if (grouped.length > 0) {
      await ctx.projections.catchUp();
      const connectors = new Map<Messenger, MessengerConnector>(MESSENGERS.map((m) => [m, new SimulatorConnector(m, simulator)]));
      const administrator = await startGroupAdministrator({
        store: ctx.store,
        sealer: ctx.sealer,
        apps: ctx.models.apps,
        groups: ctx.models.groups,
        connectors,
        log,
        syncIntervalMs: 86_400_000,
      });
      await administrator.catchUp();
      await administrator.stop();
    }

    const checkpointHead = await ctx.store.headPosition();
    for (const name of pipelineCheckpoints(config)) await ctx.store.storeCheckpoint(name, checkpointHead);

    // Texts that are no code command (a `/signin` would reach the code deps, which need a limiter).
    const deps = inboundDepsOf(ctx, {} as Parameters<typeof inboundDepsOf>[1]);
    const waiting = apps.flatMap(({ plan, built }) => Array.from({ length: plan.waiting }, (_, i) => ({ built, i, messenger: MESSENGERS[i % 3]! })));
    await inPool(waiting, concurrency, async ({ built, i, messenger }) => {
      const received = await receiveInbound(deps, { messenger, to: built.messengers[messenger].address, contactId: contactOf(messenger, i), text: `Question #${i}: is my order on its way?` });
      if (received.kind !== 'received') throw new Error(`waiting message not received: ${JSON.stringify(received)}`);
    });
    return { groups: grouped.length, waiting: waiting.length, checkpointHead };
  } finally {
    simulator.close();
    await closeContext(ctx);
  }
};
