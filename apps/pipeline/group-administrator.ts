import type { Logger } from 'pino';
import { groupDecider, groupStreamName } from '../../domain/group/decider.ts';
import type { GroupEvent, GroupOperation, GroupRef } from '../../domain/group/events.ts';
import { fold } from '../../domain/shared/decider.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';
import { DataKeyGoneError, type EventStore, type RecordedEvent } from '../../infra/event-store/port.ts';
import { GroupOperationError, type GroupActivity, type GroupAdministration, type MessengerConnector } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { GroupsProjection, GroupView } from '../../projections/groups/groups-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { membersDigest, openGroupField, openGroupKey, sealGroupField, sealMemberList, unwrapGroupKey } from '../commands/group-seal.ts';
import { checkpoints } from '../services/topology.ts';

export interface GroupAdministratorDeps {
  readonly store: EventStore;
  readonly sealer: MessageSealer;
  readonly apps: AppsProjection;
  readonly groups: GroupsProjection;
  readonly connectors: ReadonlyMap<Messenger, MessengerConnector>;
  readonly log: Logger;
  /** How often every group's member list is read from its messenger (members join by invite link, leave, are changed by other admins). */
  readonly syncIntervalMs: number;
  /**
   * The periodic sync reads at most this many groups a second (default 5), so that its cost does
   * not grow with the number of groups (issue 49): with more than `syncPerSecond × interval` groups
   * a sweep takes longer than the interval, and the next begins an interval after it ended.
   * Changes the daemons report are read at once all the same (`groupActivity`).
   */
  readonly syncPerSecond?: number;
  /** Pauses between the tries of an operation the messenger refused for now (transient). */
  readonly retryDelaysMs?: readonly number[];
}

export interface GroupAdministrator {
  /** Every request recorded before the call is carried out. */
  catchUp(): Promise<void>;
  /** One sync of every group's members now. */
  syncAll(): Promise<void>;
  /** A daemon told of a change in a bot's group: its members are read again shortly. */
  groupActivity(activity: GroupActivity): void;
  stop(): Promise<void>;
}

type Requested = Extract<GroupEvent, { type: 'GroupChangeRequested' }>;

/** How long reported group activity is gathered before the groups are read again. */
const ACTIVITY_GATHER_MS = 200;
/** The most groups whose keys the sweep reads in one query. */
const KEY_READ_SLICE = 100;

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Carries out the group requests the account API records (`GroupChangeRequested`), in order, on
 * the app-messenger's connector: creates the group on the first request, makes the change, records
 * what came of it (`GroupMemberAdded` … or `GroupChangeFailed` with the messenger's reason), then
 * records the member list when it changed. A daemon that cannot be reached holds its messenger's
 * requests back (retried from the checkpoint of that messenger's subscription) without failing
 * them; a refusal for now is tried three times.
 * A crash between the messenger's answer and the record carries the request out again: adding,
 * removing and role changes are idempotent, a group creation is not (the messenger then holds an
 * unused group).
 */
export const startGroupAdministrator = async (deps: GroupAdministratorDeps): Promise<GroupAdministrator> => {
  const log = deps.log.child({ component: 'groups' });
  const retryDelays = deps.retryDelaysMs ?? [1000, 3000];
  /** Records through the group decider; an event that holds something sealed requires its key in the same transaction. */
  const record = (appMessengerId: string, command: Parameters<typeof groupDecider.decide>[0], causedBy?: RecordedEvent, keyId?: string) =>
    handleCommand(
      deps.store,
      groupStreamName(appMessengerId),
      groupDecider,
      command,
      {
        actor: 'system:gateway',
        ...(causedBy ? { causationId: causedBy.id, ...(causedBy.metadata.correlationId ? { correlationId: causedBy.metadata.correlationId } : {}) } : {}),
      },
      keyId ? { keys: { require: [keyId] } } : {},
    );

  const fail = async (request: Requested, reason: string, recorded: RecordedEvent) => {
    await record(request.data.appMessengerId, { type: 'RecordGroupChangeFailed', data: { requestId: request.data.requestId, reason, now: new Date() } }, recorded);
    log.info({ appMessengerId: request.data.appMessengerId, operation: request.data.operation, reason }, 'group change refused');
  };

  /** The operation, tried again while the messenger refuses it for now. */
  const attempt = async <T>(operation: () => Promise<T>): Promise<T> => {
    for (let tryNumber = 0; ; tryNumber++) {
      try {
        return await operation();
      } catch (error) {
        if (!(error instanceof GroupOperationError) || error.permanent || tryNumber >= retryDelays.length) throw error;
        await wait(retryDelays[tryNumber]!);
      }
    }
  };

  /**
   * Reads the group's members from its messenger and records what changed (the decider drops a list
   * that did not change, and records the whole list now and then). `recorded`: the digest of the
   * list the read model last saw recorded: the same list is not sealed nor put to the decider again
   * (session 30: the periodic sync sealed every list and read every group's stream, 20 groups a
   * second without end at 5,000 groups). The read model is never ahead of the history, so a list
   * skipped here equals the last one recorded, or one the next sync records.
   */
  const syncMembers = async (ref: GroupRef, groupId: string, keyId: string, raw: Buffer, groups: GroupAdministration, from: string, recorded?: string | null) => {
    const members = await groups.members(from, groupId);
    const digest = membersDigest(raw, members);
    if (recorded !== undefined && recorded !== null && digest === recorded) return;
    const { appMessengerId } = ref;
    await record(
      appMessengerId,
      { type: 'RecordGroupMembers', data: { appId: ref.appId, appMessengerId, messenger: ref.messenger, members: sealMemberList(deps.sealer, raw, appMessengerId, members), keyId, digest, now: new Date() } },
      undefined,
      keyId,
    );
  };

  const carryOut = async (recorded: RecordedEvent) => {
    const request = recorded as unknown as Requested;
    const { appMessengerId, requestId, operation, messenger, appId } = request.data;
    let state = fold(groupDecider, (await deps.store.readStream(groupStreamName(appMessengerId))).events as unknown as GroupEvent[]);
    if (!state.pending.has(requestId)) return; // carried out before a crash, or a replay
    const groups = deps.connectors.get(messenger)?.groups;
    if (!groups) return fail(request, `Groups are not supported on ${messenger}`, recorded);
    const appMessenger = deps.apps.appMessenger(appMessengerId);
    if (!appMessenger) return fail(request, 'App messenger not found', recorded);
    if (appMessenger.address === null) return fail(request, 'The app messenger has no bot identity yet', recorded);
    const from = appMessenger.address;
    let raw: Buffer;
    try {
      raw = await openGroupKey(deps.store.keys, deps.sealer, request.data.keyId);
    } catch (error) {
      if (isUnavailable(error)) throw error;
      return fail(request, 'The group data key is gone (the app was deleted)', recorded);
    }
    try {
      if (!state.created) {
        const groupId = await attempt(() => groups.createGroup(from, request.data.groupName));
        const created = await record(appMessengerId, { type: 'RecordGroupCreated', data: { requestId, sealed: sealGroupField(deps.sealer, raw, appMessengerId, 'group', groupId), now: new Date() } }, recorded, request.data.keyId);
        if (!created.ok) throw new Error(created.error.message);
        state = created.events.reduce(groupDecider.evolve, state);
      }
      const groupId = openGroupField(deps.sealer, raw, appMessengerId, 'group', state.group!);
      const sealed = await attempt(() => perform(groups, operation, from, groupId, request.data.sealed, raw, appMessengerId));
      // The member list first, so that whoever sees the outcome sees the list that follows it.
      try {
        await syncMembers({ appId, appMessengerId, messenger }, groupId, request.data.keyId, raw, groups, from);
      } catch (error) {
        log.warn({ err: error, appMessengerId }, 'group members not read after a change; the next sync reads them');
      }
      const done = await record(appMessengerId, { type: 'RecordGroupChange', data: { requestId, sealed, now: new Date() } }, recorded, request.data.keyId);
      if (!done.ok) throw new Error(done.error.message);
      log.info({ appMessengerId, operation }, 'group changed');
    } catch (error) {
      if (error instanceof GroupOperationError) return fail(request, error.message, recorded);
      if (error instanceof DataKeyGoneError) return fail(request, 'The group data key is gone (the app was deleted)', recorded);
      throw error; // the daemon is away (or the store): tried again from the checkpoint
    }
  };

  /** The operation on the messenger; returns what its outcome event seals (the contact, or the link). */
  const perform = async (groups: GroupAdministration, operation: GroupOperation, from: string, groupId: string, sealedContact: string | null, raw: Buffer, appMessengerId: string): Promise<string> => {
    if (operation === 'invite-link') return sealGroupField(deps.sealer, raw, appMessengerId, 'link', await groups.inviteLink(from, groupId));
    const contactId = openGroupField(deps.sealer, raw, appMessengerId, 'contact', sealedContact!);
    if (operation === 'add-member') await groups.addMember(from, groupId, contactId);
    else if (operation === 'remove-member') await groups.removeMember(from, groupId, contactId);
    else await groups.setRole(from, groupId, contactId, operation === 'promote-admin' ? 'admin' : 'member');
    return sealedContact!;
  };

  // One subscription per messenger: a daemon that is away holds back its own requests, not the others'.
  const subscriptions: CheckpointedSubscription[] = [];
  for (const messenger of deps.connectors.keys()) {
    subscriptions.push(
      await startCheckpointedSubscription(deps.store, {
        name: checkpoints.groupAdministrator(messenger),
        filter: { categories: ['group'], types: ['GroupChangeRequested'] },
        log,
        batchSize: 20,
        handler: async (events) => {
          for (const recorded of events) if ((recorded.data as { messenger?: unknown }).messenger === messenger) await carryOut(recorded);
        },
      }),
    );
  }

  /**
   * Reads one group's members from its messenger and records them when they changed; `onlyGroupId`:
   * if it is that group. `wrappedKeys`: the group keys the sweep read for its slice (else its own read).
   */
  const syncOne = async (view: Readonly<GroupView>, onlyGroupId?: string, wrappedKeys?: ReadonlyMap<string, string>) => {
    const groups = deps.connectors.get(view.messenger)?.groups;
    const appMessenger = deps.apps.appMessenger(view.appMessengerId);
    if (!groups || !appMessenger?.address) return;
    try {
      if (view.group === null) return;
      const raw = wrappedKeys ? unwrapGroupKey(deps.sealer, view.keyId, wrappedKeys.get(view.keyId)) : await openGroupKey(deps.store.keys, deps.sealer, view.keyId);
      const groupId = openGroupField(deps.sealer, raw, view.appMessengerId, 'group', view.group);
      if (onlyGroupId !== undefined && groupId !== onlyGroupId) return;
      await syncMembers(view, groupId, view.keyId, raw, groups, appMessenger.address, view.membersDigest);
    } catch (error) {
      log.warn({ err: error, appMessengerId: view.appMessengerId }, 'group members not synced; trying again next round');
    }
  };

  /** The keys of a slice of groups in one read of the store; undefined if it failed (each group then reads its own, and says why). */
  const readKeys = async (views: readonly Readonly<GroupView>[]): Promise<ReadonlyMap<string, string> | undefined> => {
    try {
      return await deps.store.keys.get([...new Set(views.map((view) => view.keyId))], new Date());
    } catch {
      return undefined;
    }
  };

  let syncing: Promise<void> | undefined;
  /**
   * Syncs every group; `paced`: at most `syncPerSecond` a second (the periodic sweep). The groups go
   * in slices of a second's worth (at most KEY_READ_SLICE), their keys read in one query: at 5,000
   * groups the sweep never rests, and its key reads, one a group, were the most frequent query of a
   * Relay at rest (issue 49, session 41).
   */
  const syncAll = (paced = false) => {
    syncing ??= (async () => {
      const perSecond = deps.syncPerSecond ?? 5;
      const gapMs = 1000 / perSecond;
      const views = [...deps.groups.created()];
      const sliceSize = Math.min(perSecond, KEY_READ_SLICE);
      for (let from = 0; from < views.length; from += sliceSize) {
        if (stopped) return;
        const slice = views.slice(from, from + sliceSize).filter((view) => view.group !== null);
        const wrappedKeys = slice.length > 0 ? await readKeys(slice) : undefined;
        for (const view of slice) {
          if (stopped) return;
          const started = Date.now();
          await syncOne(view, undefined, wrappedKeys);
          const left = gapMs - (Date.now() - started);
          if (paced && left > 0) await new Promise((resolve) => setTimeout(resolve, left).unref());
        }
      }
    })().finally(() => (syncing = undefined));
    return syncing;
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const sweep = (): void => {
    timer = setTimeout(() => {
      if (stopped) return;
      void syncAll(true).finally(() => {
        if (!stopped) sweep();
      });
    }, deps.syncIntervalMs);
    timer.unref();
  };
  sweep();

  /** Activity the daemons report, gathered for a moment (one change often comes as several events). */
  const active = new Map<string, string>();
  let activityTimer: NodeJS.Timeout | undefined;
  let activitySync: Promise<void> = Promise.resolve();
  const groupActivity = (activity: GroupActivity) => {
    const appMessenger = deps.apps.byBotAddress(activity.messenger, activity.to);
    if (stopped || !appMessenger || !deps.groups.group(appMessenger.id)?.group) return;
    active.set(appMessenger.id, activity.groupId);
    activityTimer ??= setTimeout(() => {
      activityTimer = undefined;
      const due = [...active];
      active.clear();
      activitySync = activitySync.then(async () => {
        for (const [appMessengerId, groupId] of due) {
          const view = deps.groups.group(appMessengerId);
          if (view) await syncOne(view, groupId);
        }
      });
    }, ACTIVITY_GATHER_MS);
  };

  return {
    catchUp: async () => {
      await Promise.all(subscriptions.map((s) => s.catchUp()));
    },
    syncAll: () => syncAll(),
    groupActivity,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      if (activityTimer) clearTimeout(activityTimer);
      await activitySync;
      await syncing;
      await Promise.all(subscriptions.map((s) => s.stop()));
    },
  };
};
