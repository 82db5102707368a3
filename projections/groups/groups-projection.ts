import type { GroupEvent, GroupOperation } from '../../domain/group/events.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';

/** What became of a group request. */
export type GroupOutcome =
  | { readonly status: 'pending'; readonly operation: GroupOperation }
  | { readonly status: 'done'; readonly operation: GroupOperation }
  | { readonly status: 'failed'; readonly operation: GroupOperation; readonly reason: string };

/** An app-messenger's group as Relay knows it: sealed fields stay sealed here (the routes open them). */
export interface GroupView {
  /** The app-messenger's id (one group each). */
  id: string;
  appId: string;
  appMessengerId: string;
  messenger: Messenger;
  keyId: string;
  /** The messenger's group id, sealed; null until created. */
  group: string | null;
  createdAt: string | null;
  link: string | null;
  /** The member list sealed as one (written before issue 23); null once members are kept one by one. */
  members: string | null;
  /** The members sealed one by one, by member ref (the current form); null until a list in that form was recorded. */
  memberEntries: Record<string, string> | null;
  memberCount: number;
  /** The keyed digest of the last recorded member list (undefined in a snapshot written before it was kept). */
  membersDigest?: string | null;
  syncedAt: string | null;
  /** The latest requests (at most KEPT_OUTCOMES), oldest first, with what became of each. */
  requests: Array<{ requestId: string; outcome: GroupOutcome }>;
}

const KEPT_OUTCOMES = 50;

/** Every app-messenger's group, and what became of recent requests (for a route that waits on one). */
export class GroupsProjection implements Projection {
  readonly name = 'groups';
  readonly categories = ['group'] as const;
  private readonly byAppMessenger = new Map<string, GroupView>();
  private readonly listeners = new Set<(appMessengerId: string) => void>();

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as GroupEvent;
    const { appMessengerId } = event.data;
    if (event.type === 'GroupChangeRequested') {
      const view = this.byAppMessenger.get(appMessengerId) ?? {
        id: appMessengerId, appId: event.data.appId, appMessengerId, messenger: event.data.messenger, keyId: event.data.keyId,
        group: null, createdAt: null, link: null, members: null, memberEntries: null, memberCount: 0, membersDigest: null, syncedAt: null, requests: [],
      };
      view.requests.push({ requestId: event.data.requestId, outcome: { status: 'pending', operation: event.data.operation } });
      if (view.requests.length > KEPT_OUTCOMES) view.requests.splice(0, view.requests.length - KEPT_OUTCOMES);
      this.byAppMessenger.set(appMessengerId, view);
      return this.changed(appMessengerId);
    }
    const view = this.byAppMessenger.get(appMessengerId);
    if (!view) return;
    switch (event.type) {
      case 'GroupCreated':
        view.group = event.data.sealed;
        view.createdAt = event.data.createdAt;
        return;
      case 'GroupMembersSynced':
        if ('members' in event.data) {
          view.memberEntries = Object.fromEntries(event.data.members.map((m) => [m.memberRef, m.sealed]));
          view.members = null;
        } else {
          view.members = event.data.sealed;
          view.memberEntries = null;
        }
        view.memberCount = event.data.memberCount;
        view.membersDigest = event.data.digest;
        view.syncedAt = event.data.syncedAt;
        return this.changed(appMessengerId);
      case 'GroupMembersChanged': {
        const entries = (view.memberEntries ??= {});
        for (const m of event.data.changed) entries[m.memberRef] = m.sealed;
        for (const memberRef of event.data.removedRefs) delete entries[memberRef];
        view.memberCount = event.data.memberCount;
        view.membersDigest = event.data.digest;
        view.syncedAt = event.data.changedAt;
        return this.changed(appMessengerId);
      }
      case 'GroupInviteLinkCreated':
        view.link = event.data.sealed;
        return this.settle(view, event.data.requestId, undefined);
      case 'GroupMemberAdded':
      case 'GroupMemberRemoved':
      case 'GroupAdminPromoted':
      case 'GroupAdminDemoted':
        return this.settle(view, event.data.requestId, undefined);
      case 'GroupChangeFailed':
        return this.settle(view, event.data.requestId, event.data.reason);
      default:
        return; // unknown types are ignored
    }
  }

  private settle(view: GroupView, requestId: string, failure: string | undefined) {
    const request = view.requests.find((r) => r.requestId === requestId);
    if (request) {
      const { operation } = request.outcome;
      request.outcome = failure === undefined ? { status: 'done', operation } : { status: 'failed', operation, reason: failure };
    }
    this.changed(view.appMessengerId);
  }

  private changed(appMessengerId: string) {
    for (const listener of this.listeners) listener(appMessengerId);
  }

  group(appMessengerId: string): Readonly<GroupView> | undefined {
    return this.byAppMessenger.get(appMessengerId);
  }

  outcome(appMessengerId: string, requestId: string): GroupOutcome | undefined {
    return this.byAppMessenger.get(appMessengerId)?.requests.find((r) => r.requestId === requestId)?.outcome;
  }

  /** Groups that exist on their messenger (for a sync of their members). */
  created(): Array<Readonly<GroupView>> {
    return [...this.byAppMessenger.values()].filter((g) => g.group !== null);
  }

  /** Called with an app-messenger id whenever its group's requests or members change; returns the unsubscribe. */
  onChange(listener: (appMessengerId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(): unknown {
    return [...this.byAppMessenger.values()];
  }

  restore(snapshot: unknown): void {
    this.byAppMessenger.clear();
    for (const view of snapshot as GroupView[]) this.byAppMessenger.set(view.appMessengerId, { ...view, memberEntries: view.memberEntries ?? null });
  }
}
