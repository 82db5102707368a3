import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { groupGoneHandler, type GroupChanges } from '../group-changes.ts';
import { groupQuery } from '../schemas.ts';
import { groupInviteLinkResponse, pendingInviteLinkResponse } from '../response-schemas.ts';

/**
 * Turning a group's invite link on (and making the group if need be): Relay's own route,
 * `POST /dashboard/group/invite-link {appMessengerId}`, outside the interface's prefix, whose
 * table keeps `GET /group/invite-link` for reading (issue 47: a GET must not change state). The
 * proxy in front of it applies the account API's rules: same-origin, JSON, the session cookie.
 * 200 with the link once the messenger made it (the same link afterwards), 202 while it has not
 * answered (the change goes on), 400 with its refusal. docs/groups.md.
 */
export const groupInviteLinkRoutes =
  (changes: GroupChanges): FastifyPluginAsyncZod =>
  async (app) => {
    app.setErrorHandler(groupGoneHandler);
    app.post(
      '/invite-link',
      {
        schema: {
          summary: "Turns the invite link of the app-messenger's group on (the group made if need be), and gives it",
          body: groupQuery,
          response: { 200: groupInviteLinkResponse, 202: pendingInviteLinkResponse },
        },
      },
      async (request, reply) => {
        const found = await changes.target(request, reply, request.body.appMessengerId);
        if (!found) return reply;
        const { appMessenger } = found;
        const known = await changes.inviteLink(appMessenger);
        if (known.groupId !== null && known.inviteLink !== null) return { ...known, groupId: known.groupId, inviteLink: known.inviteLink };
        const changed = await changes.change(reply, request.id, found.userId, appMessenger, 'invite-link', null);
        if (!changed) return reply;
        const made = changed.done ? await changes.inviteLink(appMessenger) : undefined;
        if (made?.groupId && made.inviteLink) return { ...made, groupId: made.groupId, inviteLink: made.inviteLink };
        return reply.code(202).send({ success: true, data: { requestId: changed.requestId, appMessengerId: appMessenger.id, operation: 'invite-link', status: 'pending' } });
      },
    );
  };
