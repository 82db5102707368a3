/**
 * What the group routes share (routes/groups.ts, routes/group-invite-link.ts): the session user's
 * app-messenger, a change recorded as a request and waited for (`GroupChangeRequested`, carried out
 * by the pipeline's group administrator), the per-user limit on changes, and the invite link as
 * Relay recorded it. Shapes and rules: docs/groups.md.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { groupDecider, groupStreamName } from '../../domain/group/decider.ts';
import type { GroupOperation } from '../../domain/group/events.ts';
import { newId } from '../../infra/ids/new-id.ts';
import { DataKeyGoneError } from '../../infra/event-store/port.ts';
import { groupMemberLimitOf } from '../../infra/messenger/messenger-rules.ts';
import type { AppMessengerView } from '../../projections/apps/apps-projection.ts';
import type { RelayContext } from '../services/context.ts';
import { GroupKeyGoneError, groupKeyOf, openGroupField, openGroupKey, sealGroupField, type GroupKey } from '../commands/group-seal.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { fail, failDomain, failLimited } from './errors.ts';
import { outcomeOf } from './group-outcome.ts';
import { requireUser } from './session.ts';

/**
 * What the six routes answer for a Session app-messenger when Relay runs on the Session network
 * (SESSION_NETWORK=on): its client has no groups (Session's groups v2 are not built; docs/groups.md).
 * On the simulator (SESSION_NETWORK=off) Session groups are simulated as before.
 */
export const SESSION_GROUPS_REFUSED = 'Session groups are not supported by Relay: its Session client sends and receives one-to-one messages only';

export interface GroupChanges {
  /** The session user's app-messenger, or undefined with the reply already sent. */
  target(request: FastifyRequest, reply: FastifyReply, appMessengerId: string): Promise<{ userId: string; appMessenger: AppMessengerView } | undefined>;
  /** Records a request and waits for the messenger's answer; undefined with the reply sent when refused. */
  change(reply: FastifyReply, correlationId: string, userId: string, appMessenger: AppMessengerView, operation: GroupOperation, contactId: string | null): Promise<{ requestId: string; done: boolean } | undefined>;
  /** The group's invite link as recorded, opened (null where there is none yet). */
  inviteLink(appMessenger: AppMessengerView): Promise<{ appMessengerId: string; messenger: AppMessengerView['messenger']; groupId: string | null; inviteLink: string | null }>;
  /** The data key of the group's sealed fields. */
  keyOf(keyId: string): Promise<Buffer>;
  close(): void;
}

/** An app deleted between the ownership check and the use of its group's key: its group is gone with it. */
export const groupGoneHandler = (error: Error, _request: FastifyRequest, reply: FastifyReply) => {
  if (error instanceof GroupKeyGoneError || error instanceof DataKeyGoneError) return fail(reply, 400, 'App messenger not found');
  throw error; // the account API's own handler answers the rest
};

export const groupChanges = (ctx: RelayContext): GroupChanges => {
  /** Group changes per user and minute (issue 23: they were unthrottled). */
  const limiter = ctx.limits.limiter(60_000);
  const keyOf = (keyId: string) => openGroupKey(ctx.store.keys, ctx.sealer, keyId);

  return {
    keyOf,
    close: () => limiter.close(),

    target: async (request, reply, appMessengerId) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return undefined;
      const appMessenger = ctx.models.apps.appMessenger(appMessengerId);
      const owner = appMessenger ? ctx.models.apps.app(appMessenger.appId) : undefined;
      if (!appMessenger || !owner || owner.userId !== user.id) {
        fail(reply, 400, 'App messenger not found');
        return undefined;
      }
      if (appMessenger.messenger === 'session' && ctx.config.SESSION_NETWORK === 'on') {
        fail(reply, 400, SESSION_GROUPS_REFUSED);
        return undefined;
      }
      return { userId: user.id, appMessenger };
    },

    change: async (reply, correlationId, userId, appMessenger, operation, contactId) => {
      if (appMessenger.address === null) return void fail(reply, 400, 'The app messenger has no bot identity yet');
      if (appMessenger.status === 'disabled') return void fail(reply, 400, 'App messenger is disabled');
      const limit = groupMemberLimitOf(appMessenger.messenger);
      if (operation === 'add-member' && (ctx.models.groups.group(appMessenger.id)?.memberCount ?? 0) >= limit)
        return void fail(reply, 400, `The group is full: at most ${limit} members on ${appMessenger.messenger}`);
      const budget = await limiter.consume(`group:${userId}`, 1, ctx.config.GROUP_CHANGES_PER_MIN);
      if (!budget.allowed) return void failLimited(reply, budget.resetAt, 'Too many group changes: try again later');
      const app = ctx.models.apps.app(appMessenger.appId)!;
      const requestId = newId.groupRequest();
      let key: GroupKey | undefined;
      const result = await handleCommand(
        ctx.store,
        groupStreamName(appMessenger.id),
        groupDecider,
        async (state) => {
          key = await groupKeyOf(ctx.store.keys, ctx.sealer, state, appMessenger.appId, appMessenger.id);
          return {
            type: 'RequestGroupChange' as const,
            data: {
              appId: appMessenger.appId,
              appMessengerId: appMessenger.id,
              messenger: appMessenger.messenger,
              requestId,
              operation,
              sealed: contactId === null ? null : sealGroupField(ctx.sealer, key.raw, appMessenger.id, 'contact', contactId),
              keyId: key.id,
              groupName: app.settings.name,
              now: new Date(),
            },
          };
        },
        { actor: `user:${userId}`, correlationId },
        { keys: () => key?.changes },
      );
      if (!result.ok) return void failDomain(reply, result.error);
      await ctx.projections.catchUp();
      const outcome = await outcomeOf(ctx.models.groups, appMessenger.id, requestId, ctx.config.GROUP_CHANGE_WAIT_MS);
      if (outcome?.status === 'failed') return void fail(reply, 400, outcome.reason);
      return { requestId, done: outcome?.status === 'done' };
    },

    inviteLink: async (appMessenger) => {
      const group = ctx.models.groups.group(appMessenger.id);
      const common = { appMessengerId: appMessenger.id, messenger: appMessenger.messenger };
      if (!group?.group) return { ...common, groupId: null, inviteLink: null };
      const raw = await keyOf(group.keyId);
      return {
        ...common,
        groupId: openGroupField(ctx.sealer, raw, appMessenger.id, 'group', group.group),
        inviteLink: group.link ? openGroupField(ctx.sealer, raw, appMessenger.id, 'link', group.link) : null,
      };
    },
  };
};
