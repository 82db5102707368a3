/**
 * Linking a Signal account from the dashboard, as `relay signal link` does from a terminal: the
 * owner of a Signal app-messenger that has no identity yet asks for a link (`POST
 * /dashboard/signal/link {appMessengerId}`), gets signal-cli's `sgnl://linkdevice` URI to show as
 * a QR code, scans it with the Signal app, and follows the outcome (`GET
 * /dashboard/signal/link/:appMessengerId`): the linked account becomes the bot's identity. Outside
 * the account API's prefix (its route table is the interface's), signed in by the session cookie,
 * same-origin only. One link at a time per app-messenger, its slot taken before the daemon is asked
 * (signal-link-slots.ts); what became of it is kept in memory for a while (this process's; a
 * restart forgets a pending link, which the user simply asks again once its slot expired).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RelayContext } from '../services/context.ts';
import { signalRpcOf } from '../services/signal-rpc.ts';
import { isCrossOrigin, PROXY_ERRORS } from '../dashboard/proxy.ts';
import { cookieUser, withCookies } from './dashboard-session.ts';
import { signalLinks, type LinkAnswer } from './signal-link-slots.ts';

const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });
const answer = (reply: FastifyReply, given: LinkAnswer) => {
  if (given.retryAfterSeconds !== undefined) void reply.header('retry-after', String(given.retryAfterSeconds));
  return reply.code(given.status).send(given.body);
};

export const signalLinkRoutes = (ctx: RelayContext) => async (app: FastifyInstance) => {
  await withCookies(app);
  const links = signalLinks(ctx, () => signalRpcOf(ctx.config, ctx.log), ctx.log.child({ component: 'signal-link' }));
  app.addHook('onClose', async () => links.close());

  const userOf = (request: FastifyRequest) => cookieUser(ctx, app, request);
  /** The app-messenger, if it is the user's (anyone else's, or none, reads the same). */
  const ownSignalMessenger = (userId: string, appMessengerId: unknown) => {
    if (typeof appMessengerId !== 'string') return undefined;
    const appMessenger = ctx.models.apps.appMessenger(appMessengerId);
    const owner = appMessenger ? ctx.models.apps.app(appMessenger.appId)?.userId : undefined;
    return appMessenger && owner === userId && appMessenger.messenger === 'signal' ? appMessenger : undefined;
  };

  app.post('/dashboard/signal/link', { schema: { hide: true } }, async (request, reply) => {
    // The proxy's same-origin rule (default ports, a scheme a TLS terminator changed), in its words.
    if (isCrossOrigin(request.headers.origin, request.headers.host)) return fail(reply, 400, PROXY_ERRORS.crossOrigin);
    const user = await userOf(request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const appMessengerId = (request.body as { appMessengerId?: unknown } | undefined)?.appMessengerId;
    const appMessenger = ownSignalMessenger(user.id, appMessengerId);
    if (!appMessenger) return fail(reply, 400, 'Invalid appMessengerId: not a Signal app-messenger of yours');
    if (appMessenger.address !== null) return fail(reply, 400, `This bot already has the Signal identity ${appMessenger.address}`);
    if (!ctx.config.SIGNAL_CLI_URL) return fail(reply, 400, 'Signal is not connected on this Relay: its operator sets SIGNAL_CLI_URL (a signal-cli daemon)');
    return answer(reply, await links.start(user.id, appMessenger, request.id));
  });

  app.get<{ Params: { appMessengerId: string } }>('/dashboard/signal/link/:appMessengerId', { schema: { hide: true } }, async (request, reply) => {
    const user = await userOf(request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const appMessenger = ownSignalMessenger(user.id, request.params.appMessengerId);
    if (!appMessenger) return fail(reply, 400, 'Invalid appMessengerId: not a Signal app-messenger of yours');
    return reply.send({ success: true, data: links.view(appMessenger.id) });
  });
};
