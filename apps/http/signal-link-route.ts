/**
 * Linking a Signal account from the dashboard, as `relay signal link` does from a terminal: the
 * owner of a Signal app-messenger that has no identity yet asks for a link (`POST
 * /dashboard/signal/link {appMessengerId}`), gets signal-cli's `sgnl://linkdevice` URI to show as
 * a QR code, scans it with the Signal app, and follows the outcome (`GET
 * /dashboard/signal/link/:appMessengerId`): the linked account becomes the bot's identity. Outside
 * the account API's prefix (its route table is the interface's), signed in by the session cookie,
 * same-origin only. One link at a time per app-messenger; what became of it is kept in memory for
 * a while (this process's; a restart forgets a pending link, which the user simply asks again).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import type { RelayContext } from '../boot/context.ts';
import { signalRpcOf } from '../boot/connectors.ts';
import { linkFailureReason, linkSignalAccount } from '../cli/commands/signal-link.ts';
import { isCrossOrigin, PROXY_ERRORS } from '../dashboard/proxy.ts';
import { cookieUser, withCookies } from './dashboard-session.ts';

type LinkState =
  | { readonly status: 'pending'; readonly uri: string; readonly expiresAt: number }
  | { readonly status: 'linked'; readonly account: string; readonly expiresAt: number }
  | { readonly status: 'failed'; readonly reason: string; readonly expiresAt: number };

/** How long the phone has to scan, and how long an outcome is kept for the page to read. */
const WAIT_FOR_PHONE_MS = 5 * 60_000;
const KEEP_OUTCOME_MS = 10 * 60_000;
const MAX_LINKS = 200;

const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });

export const signalLinkRoutes = (ctx: RelayContext) => async (app: FastifyInstance) => {
  await withCookies(app);
  const links = new Map<string, LinkState>();
  let rpc: SignalRpc | undefined;
  app.addHook('onClose', async () => {
    await rpc?.close();
  });

  const userOf = (request: FastifyRequest) => cookieUser(ctx, app, request);
  /** The app-messenger, if it is the user's (anyone else's, or none, reads the same). */
  const ownSignalMessenger = (userId: string, appMessengerId: unknown) => {
    if (typeof appMessengerId !== 'string') return undefined;
    const appMessenger = ctx.models.apps.appMessenger(appMessengerId);
    const owner = appMessenger ? ctx.models.apps.app(appMessenger.appId)?.userId : undefined;
    return appMessenger && owner === userId && appMessenger.messenger === 'signal' ? appMessenger : undefined;
  };
  const sweep = (now: number) => {
    for (const [id, state] of links) if (state.expiresAt < now) links.delete(id);
  };

  app.post('/dashboard/signal/link', { schema: { hide: true } }, async (request, reply) => {
    // The proxy's same-origin rule (default ports, a scheme a TLS terminator changed), in its words.
    if (isCrossOrigin(request.headers.origin, request.headers.host)) return fail(reply, 400, PROXY_ERRORS.crossOrigin);
    const user = userOf(request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const appMessengerId = (request.body as { appMessengerId?: unknown } | undefined)?.appMessengerId;
    const appMessenger = ownSignalMessenger(user.id, appMessengerId);
    if (!appMessenger) return fail(reply, 400, 'Invalid appMessengerId: not a Signal app-messenger of yours');
    if (appMessenger.address !== null) return fail(reply, 400, `This bot already has the Signal identity ${appMessenger.address}`);
    if (!ctx.config.SIGNAL_CLI_URL) return fail(reply, 400, 'Signal is not connected on this Relay: its operator sets SIGNAL_CLI_URL (a signal-cli daemon)');
    const now = Date.now();
    sweep(now);
    const current = links.get(appMessenger.id);
    if (current?.status === 'pending') return reply.send({ success: true, data: { status: 'pending', uri: current.uri } });
    if (links.size >= MAX_LINKS) return reply.code(429).header('retry-after', '60').send({ success: false, error: 'Too many links pending: try again later' });

    rpc ??= signalRpcOf(ctx.config, ctx.log);
    let resolveShown!: (uri: string) => void;
    const shown = new Promise<string>((resolve) => (resolveShown = resolve));
    const settle = (state: LinkState) => links.set(appMessenger.id, state);
    void linkSignalAccount(
      {
        store: ctx.store,
        apps: ctx.models.apps,
        rpc,
        show: (instructions) => {
          const uri = /sgnl:\/\/linkdevice\?\S+/.exec(instructions)?.[0];
          if (uri) {
            settle({ status: 'pending', uri, expiresAt: Date.now() + WAIT_FOR_PHONE_MS });
            resolveShown(uri);
          }
        },
      },
      { appMessengerId: appMessenger.id, deviceName: 'Relay', timeoutMs: WAIT_FOR_PHONE_MS, now: () => new Date() },
    ).then(
      (outcome) => {
        settle(outcome.ok ? { status: 'linked', account: outcome.account, expiresAt: Date.now() + KEEP_OUTCOME_MS } : { status: 'failed', reason: outcome.reason, expiresAt: Date.now() + KEEP_OUTCOME_MS });
        resolveShown('');
      },
      (error: unknown) => {
        const reason = linkFailureReason(error) ?? `signal-cli did not link: ${error instanceof Error ? error.message : String(error)}`;
        settle({ status: 'failed', reason, expiresAt: Date.now() + KEEP_OUTCOME_MS });
        resolveShown('');
      },
    );
    const uri = await shown;
    const state = links.get(appMessenger.id);
    if (!uri && state?.status === 'failed') return fail(reply, 502, state.reason);
    return reply.send({ success: true, data: { status: 'pending', uri } });
  });

  app.get<{ Params: { appMessengerId: string } }>('/dashboard/signal/link/:appMessengerId', { schema: { hide: true } }, async (request, reply) => {
    const user = userOf(request);
    if (!user) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
    const appMessenger = ownSignalMessenger(user.id, request.params.appMessengerId);
    if (!appMessenger) return fail(reply, 400, 'Invalid appMessengerId: not a Signal app-messenger of yours');
    sweep(Date.now());
    const state = links.get(appMessenger.id);
    if (!state) return reply.send({ success: true, data: { status: 'none' } });
    const { expiresAt: _, ...shown } = state;
    return reply.send({ success: true, data: shown });
  });
};
