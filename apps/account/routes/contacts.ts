import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { fold } from '../../../domain/shared/decider.ts';
import { messengerCodeDecider, messengerCodeStreamName } from '../../../domain/messenger-code/decider.ts';
import { ENDING_REFUSALS, type MessengerCodeEvent } from '../../../domain/messenger-code/events.ts';
import { MAX_LINKED_CONTACTS } from '../../../domain/user/decider.ts';
import type { UserEvent } from '../../../domain/user/events.ts';
import type { RelayContext } from '../../services/context.ts';
import { openContact } from '../../commands/contact-seal.ts';
import { issueMessengerCode } from '../../commands/issue-messenger-code.ts';
import { fail, failDomain, failLimited } from '../errors.ts';
import { requireUser } from '../session.ts';
import { handleUserCommand } from '../user-command.ts';
import { contactListResponse, linkCodeResponse, linkStatusResponse, unlinkedContactResponse } from '../response-schemas.ts';

const WINDOW_MS = 15 * 60_000;
/** Link codes one user may ask for in 15 minutes. */
const LINK_CODES_PER_WINDOW = 10;
const LINK_NOT_FOUND = 'Link not found';

/**
 * The messenger contacts of the signed-in user, under `/dashboard/auth/contacts`
 * (docs/sign-in.md): `POST /link` shows a code to send as `/link CODE` to any Relay bot from the
 * contact to link; `GET /link/<linkId>` says whether it arrived; `GET /` lists the linked
 * contacts (opened for their owner only); `DELETE /<id>` unlinks one and destroys the key its
 * contact id was sealed with. A linked contact can sign in (`/signin`) and receive alerts.
 */
export const contactRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const limiter = ctx.limits.limiter(WINDOW_MS);
    app.addHook('onClose', async () => limiter.close());

    app.post('/contacts/link', { schema: { summary: 'A code to send as /link CODE to any Relay bot from the messenger contact to link', response: { 202: linkCodeResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      if (ctx.models.users.contactsOf(user.id).length >= MAX_LINKED_CONTACTS) return fail(reply, 400, `Contact limit reached: at most ${MAX_LINKED_CONTACTS} per user`);
      const allowed = await limiter.consume(user.id, 1, LINK_CODES_PER_WINDOW);
      if (!allowed.allowed) return failLimited(reply, allowed.resetAt, 'Too many link codes: try again later');
      const issued = await issueMessengerCode(
        ctx.store,
        ctx.keyedHash,
        { purpose: 'link', userId: user.id, pollSecretHash: null, ttlSeconds: ctx.config.MESSENGER_CODE_TTL_SECONDS },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      return reply
        .code(202)
        .header('cache-control', 'no-store')
        .send({ success: true, data: { linkId: issued.codeRef, code: issued.code, command: `/link ${issued.code}`, expiresAt: issued.expiresAt.toISOString() } });
    });

    app.get('/contacts/link/:linkId', { schema: { summary: 'Whether the contact sent the link code yet', params: z.object({ linkId: z.string() }), response: { 200: linkStatusResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const { linkId } = request.params;
      if (!/^[0-9a-f]{32}$/.test(linkId)) return fail(reply, 400, LINK_NOT_FOUND);
      const code = fold(messengerCodeDecider, (await ctx.store.readStream(messengerCodeStreamName(linkId))).events as unknown as MessengerCodeEvent[]);
      if (code.status === 'none' || code.purpose !== 'link' || code.userId !== user.id) return fail(reply, 400, LINK_NOT_FOUND);
      await ctx.projections.catchUp();
      const linked = ctx.models.users.contactsOf(user.id).find((c) => c.contactLinkId === linkId);
      const ended = code.status === 'issued' && code.refused.some((reason) => ENDING_REFUSALS.includes(reason));
      const status: 'linked' | 'expired' | 'pending' | 'refused' = linked ? 'linked' : ended ? 'refused' : code.status === 'issued' && Date.now() >= code.expiresAt ? 'expired' : 'pending';
      return {
        success: true as const,
        data: {
          linkId,
          status,
          expiresAt: new Date(code.expiresAt).toISOString(),
          ...(linked ? { contact: { id: linked.contactLinkId, messenger: linked.messenger, linkedAt: linked.linkedAt } } : {}),
          refused: [...code.refused],
        },
      };
    });

    app.get('/contacts', { schema: { summary: 'The messenger contacts linked to the account', response: { 200: contactListResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const items = [];
      for (const contact of ctx.models.users.contactsOf(user.id)) {
        const contactId = await openContact(ctx.store.keys, ctx.sealer, contact);
        // Unlinked a moment ago (its key is gone): no longer one of them.
        if (contactId !== undefined) items.push({ id: contact.contactLinkId, messenger: contact.messenger, contactId, linkedAt: contact.linkedAt });
      }
      return reply.header('cache-control', 'no-store').send({ items });
    });

    app.delete('/contacts/:id', { schema: { summary: 'Unlinks a contact (its sealed contact id is shredded)', params: z.object({ id: z.string() }), response: { 200: unlinkedContactResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const result = await handleUserCommand(
        ctx,
        user,
        request,
        { type: 'UnlinkMessengerContact', data: { contactLinkId: request.params.id.slice(0, 64), now: new Date() } },
        { keys: (events: readonly UserEvent[]) => ({ destroy: events.flatMap((e) => (e.type === 'MessengerContactUnlinked' ? [e.data.keyId] : [])) }) },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { success: true as const, data: { id: request.params.id, unlinked: true as const } };
    });
  };
