import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { groupDecider, groupStreamName } from '../../../domain/group/decider.ts';
import type { GroupOperation } from '../../../domain/group/events.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { contactRejectionOf, groupMemberLimitOf } from '../../../infra/messenger/messenger-rules.ts';
import { RateLimiter } from '../../api/rate-limiter.ts';
import type { AppMessengerView } from '../../../projections/apps/apps-projection.ts';
import type { RelayContext } from '../../boot/context.ts';
import { GroupKeyGoneError, groupKeyOf, openGroupField, openGroupKey, openMemberList, openMembers, sealGroupField, type GroupKey } from '../../commands/group-seal.ts';
import { DataKeyGoneError } from '../../../infra/event-store/port.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { fail, failDomain, failLimited } from '../errors.ts';
import { outcomeOf } from '../group-outcome.ts';
import { groupChangeBody, groupQuery } from '../schemas.ts';
import { groupChangeDoneResponse, groupChangePendingResponse, groupInviteLinkResponse, groupMembersResponse, pendingInviteLinkResponse } from '../response-schemas.ts';
import { requireUser } from '../session.ts';

/**
 * What the six routes answer for a Session app-messenger when Relay runs on the Session network
 * (SESSION_NETWORK=on): its client has no groups (Session's groups v2 are not built; docs/groups.md).
 * On the simulator (SESSION_NETWORK=off) Session groups are simulated as before.
 */
export const SESSION_GROUPS_REFUSED = 'Session groups are not supported by Relay: its Session client sends and receives one-to-one messages only';

/**
 * The interface's six group routes. Each app-messenger's bot administers one group on its
 * messenger, created by the first member added or the first invite link asked for. A change is
 * recorded as a request (`GroupChangeRequested`) that the pipeline's group administrator carries
 * out on the messenger; the route waits up to GROUP_CHANGE_WAIT_MS for the answer (200, or 400
 * with the messenger's reason) and otherwise answers 202 with the request still pending. Reads
 * come from what Relay recorded (the member list is read from the messenger after each change
 * and every GROUP_SYNC_INTERVAL_MS), opened with the group's data key. Shapes: docs/groups.md.
 */
export const groupRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    /** Group changes per user and minute (issue 23: they were unthrottled). */
    const changes = new RateLimiter(60_000, 60_000);
    app.addHook('onClose', async () => changes.close());

    /** The session user's app-messenger, or the reply already sent. */
    const target = async (request: Parameters<typeof requireUser>[1], reply: FastifyReply, appMessengerId: string): Promise<{ userId: string; appMessenger: AppMessengerView } | undefined> => {
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
    };

    const keyOf = (keyId: string) => openGroupKey(ctx.store.keys, ctx.sealer, keyId);

    // An app deleted between the ownership check and the use of its group's key: its group is gone with it.
    app.setErrorHandler((error, _request, reply) => {
      if (error instanceof GroupKeyGoneError || error instanceof DataKeyGoneError) return fail(reply, 400, 'App messenger not found');
      throw error; // the account API's own handler answers the rest
    });

    const recentChanges = (appMessengerId: string) =>
      (ctx.models.groups.group(appMessengerId)?.requests ?? []).map(({ requestId, outcome }) => ({
        requestId,
        operation: outcome.operation,
        status: outcome.status,
        ...(outcome.status === 'failed' ? { reason: outcome.reason } : {}),
      }));

    /** Records a request and waits for the messenger's answer; sends the reply. */
    const change = async (
      reply: FastifyReply,
      correlationId: string,
      userId: string,
      appMessenger: AppMessengerView,
      operation: GroupOperation,
      contactId: string | null,
    ): Promise<{ requestId: string; done: boolean } | undefined> => {
      if (appMessenger.address === null) return void fail(reply, 400, 'The app messenger has no bot identity yet');
      if (appMessenger.status === 'disabled') return void fail(reply, 400, 'App messenger is disabled');
      const limit = groupMemberLimitOf(appMessenger.messenger);
      if (operation === 'add-member' && (ctx.models.groups.group(appMessenger.id)?.memberCount ?? 0) >= limit)
        return void fail(reply, 400, `The group is full: at most ${limit} members on ${appMessenger.messenger}`);
      const budget = changes.consume(`group:${userId}`, 1, ctx.config.GROUP_CHANGES_PER_MIN);
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
    };

    const memberChange = (path: string, operation: Exclude<GroupOperation, 'invite-link'>, summary: string) =>
      app.post(path, { schema: { summary, body: groupChangeBody, response: { 200: groupChangeDoneResponse, 202: groupChangePendingResponse } } }, async (request, reply) => {
        const found = await target(request, reply, request.body.appMessengerId);
        if (!found) return reply;
        const { contactId } = request.body;
        const rejection = contactRejectionOf(found.appMessenger.messenger, contactId);
        if (rejection) return fail(reply, 400, rejection);
        const changed = await change(reply, request.id, found.userId, found.appMessenger, operation, contactId);
        if (!changed) return reply;
        const data = { requestId: changed.requestId, appMessengerId: found.appMessenger.id, operation, contactId };
        return changed.done
          ? reply.code(200).send({ success: true, data: { ...data, status: 'done' } })
          : reply.code(202).send({ success: true, data: { ...data, status: 'pending' } });
      });

    app.get('/group/members', { schema: { summary: "The members of the app-messenger's group", querystring: groupQuery, response: { 200: groupMembersResponse } } }, async (request, reply) => {
      const found = await target(request, reply, request.query.appMessengerId);
      if (!found) return reply;
      const { appMessenger } = found;
      const group = ctx.models.groups.group(appMessenger.id);
      const common = { appMessengerId: appMessenger.id, messenger: appMessenger.messenger };
      if (!group || group.group === null)
        return { ...common, groupId: null, members: [], memberCount: 0, syncedAt: null, changes: recentChanges(appMessenger.id) };
      const raw = await keyOf(group.keyId);
      return {
        ...common,
        groupId: openGroupField(ctx.sealer, raw, appMessenger.id, 'group', group.group),
        members:
          group.memberEntries !== null
            ? openMemberList(ctx.sealer, raw, appMessenger.id, Object.values(group.memberEntries))
            : group.members === null
              ? []
              : openMembers(ctx.sealer, raw, appMessenger.id, group.members),
        memberCount: group.memberCount,
        syncedAt: group.syncedAt,
        changes: recentChanges(appMessenger.id),
      };
    });

    const inviteLinkSchema = {
      summary: "The invite link of the app-messenger's group (turned on, and the group made, if need be)",
      querystring: groupQuery,
      response: { 200: groupInviteLinkResponse, 202: pendingInviteLinkResponse },
    };
    app.get('/group/invite-link', { schema: inviteLinkSchema }, async (request, reply) => {
      const found = await target(request, reply, request.query.appMessengerId);
      if (!found) return reply;
      const { appMessenger } = found;
      const linkNow = async () => {
        const group = ctx.models.groups.group(appMessenger.id);
        if (!group?.link || !group.group) return undefined;
        const raw = await keyOf(group.keyId);
        return {
          appMessengerId: appMessenger.id,
          messenger: appMessenger.messenger,
          groupId: openGroupField(ctx.sealer, raw, appMessenger.id, 'group', group.group),
          inviteLink: openGroupField(ctx.sealer, raw, appMessenger.id, 'link', group.link),
        };
      };
      const known = await linkNow();
      if (known) return known;
      const changed = await change(reply, request.id, found.userId, appMessenger, 'invite-link', null);
      if (!changed) return reply;
      const made = changed.done ? await linkNow() : undefined;
      if (made) return made;
      return reply.code(202).send({ success: true, data: { requestId: changed.requestId, appMessengerId: appMessenger.id, operation: 'invite-link', status: 'pending' } });
    });

    memberChange('/group/members/add', 'add-member', "Adds a contact to the app-messenger's group (made if need be)");
    memberChange('/group/members/remove', 'remove-member', "Removes a member from the app-messenger's group");
    memberChange('/group/promote-admin', 'promote-admin', "Makes a member an admin of the app-messenger's group");
    memberChange('/group/demote-admin', 'demote-admin', "Makes an admin of the app-messenger's group a member again");
  };
