import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { GroupOperation } from '../../../domain/group/events.ts';
import { contactRejectionOf } from '../../../infra/messenger/messenger-rules.ts';
import type { RelayContext } from '../../services/context.ts';
import { openGroupField, openMemberList, openMembers } from '../../commands/group-seal.ts';
import { fail } from '../errors.ts';
import { groupGoneHandler, type GroupChanges } from '../group-changes.ts';
import { groupChangeBody, groupQuery } from '../schemas.ts';
import { groupChangeDoneResponse, groupChangePendingResponse, groupInviteLinkReadResponse, groupMembersResponse } from '../response-schemas.ts';

export { SESSION_GROUPS_REFUSED } from '../group-changes.ts';

/**
 * The interface's six group routes. Each app-messenger's bot administers one group on its
 * messenger, created by the first member added or by turning its invite link on. A change is
 * recorded as a request (`GroupChangeRequested`) that the pipeline's group administrator carries
 * out on the messenger; the route waits up to GROUP_CHANGE_WAIT_MS for the answer (200, or 400
 * with the messenger's reason) and otherwise answers 202 with the request still pending. Reads
 * come from what Relay recorded (the member list is read from the messenger after each change
 * and every GROUP_SYNC_INTERVAL_MS), opened with the group's data key. `GET /group/invite-link`
 * only reads (issue 47: a GET changed state): the link is turned on by `POST
 * /dashboard/group/invite-link` (group-invite-link.ts). Shapes: docs/groups.md.
 */
export const groupRoutes =
  (ctx: RelayContext, changes: GroupChanges): FastifyPluginAsyncZod =>
  async (app) => {
    app.setErrorHandler(groupGoneHandler);

    const recentChanges = (appMessengerId: string) =>
      (ctx.models.groups.group(appMessengerId)?.requests ?? []).map(({ requestId, outcome }) => ({
        requestId,
        operation: outcome.operation,
        status: outcome.status,
        ...(outcome.status === 'failed' ? { reason: outcome.reason } : {}),
      }));

    const memberChange = (path: string, operation: Exclude<GroupOperation, 'invite-link'>, summary: string) =>
      app.post(path, { schema: { summary, body: groupChangeBody, response: { 200: groupChangeDoneResponse, 202: groupChangePendingResponse } } }, async (request, reply) => {
        const found = await changes.target(request, reply, request.body.appMessengerId);
        if (!found) return reply;
        const { contactId } = request.body;
        const rejection = contactRejectionOf(found.appMessenger.messenger, contactId);
        if (rejection) return fail(reply, 400, rejection);
        const changed = await changes.change(reply, request.id, found.userId, found.appMessenger, operation, contactId);
        if (!changed) return reply;
        const data = { requestId: changed.requestId, appMessengerId: found.appMessenger.id, operation, contactId };
        return changed.done
          ? reply.code(200).send({ success: true, data: { ...data, status: 'done' } })
          : reply.code(202).send({ success: true, data: { ...data, status: 'pending' } });
      });

    app.get('/group/members', { schema: { summary: "The members of the app-messenger's group", querystring: groupQuery, response: { 200: groupMembersResponse } } }, async (request, reply) => {
      const found = await changes.target(request, reply, request.query.appMessengerId);
      if (!found) return reply;
      const { appMessenger } = found;
      const group = ctx.models.groups.group(appMessenger.id);
      const common = { appMessengerId: appMessenger.id, messenger: appMessenger.messenger };
      if (!group || group.group === null)
        return { ...common, groupId: null, members: [], memberCount: 0, syncedAt: null, changes: recentChanges(appMessenger.id) };
      const raw = await changes.keyOf(group.keyId);
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

    app.get(
      '/group/invite-link',
      {
        schema: {
          summary: "The invite link of the app-messenger's group, as it is: null until it is turned on (POST /dashboard/group/invite-link); reading changes nothing",
          querystring: groupQuery,
          response: { 200: groupInviteLinkReadResponse },
        },
      },
      async (request, reply) => {
        const found = await changes.target(request, reply, request.query.appMessengerId);
        if (!found) return reply;
        return changes.inviteLink(found.appMessenger);
      },
    );

    memberChange('/group/members/add', 'add-member', "Adds a contact to the app-messenger's group (made if need be)");
    memberChange('/group/members/remove', 'remove-member', "Removes a member from the app-messenger's group");
    memberChange('/group/promote-admin', 'promote-admin', "Makes a member an admin of the app-messenger's group");
    memberChange('/group/demote-admin', 'demote-admin', "Makes an admin of the app-messenger's group a member again");
  };
