/**
 * The Signal links the dashboard makes (`POST /dashboard/signal/link`, signal-link-route.ts), one
 * at a time per app-messenger, so that the operator's signal-cli daemon holds at most one
 * `startLink`/`finishLink` pair per bot (issue 47, item 1: twenty concurrent requests made twenty):
 * - the slot is taken in this process before anything is awaited: requests that come while it is
 *   taken wait for the same answer (the same link URI, or the same failure);
 * - it is taken in the event store too (`signallink-<appMessengerId>`, domain/signal-link), before
 *   the daemon is asked: another Relay instance on the same store (and so the same daemon) is
 *   refused while the slot is held (409), until the link ends or expires;
 * - a failed start, a link that ended, or one that expired gives the slot back;
 * - starts are limited per user (`LINK_STARTS_PER_USER` per `LINK_START_WINDOW_MS`: the context's
 *   limits, shared by the instances on PostgreSQL, this process's on the embedded store), and to
 *   `MAX_LINKS` open at once in this process.
 */
import type { Logger } from 'pino';
import type { SignalRpc } from '../../infra/messenger/signal/signal-rpc.ts';
import { newId } from '../../infra/ids/new-id.ts';
import { signalLinkDecider, signalLinkStreamName, type SignalLinkState } from '../../domain/signal-link/decider.ts';
import type { AppMessengerView } from '../../projections/apps/apps-projection.ts';
import type { RelayContext } from '../services/context.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { linkFailureReason, linkSignalAccount, type LinkOutcome } from '../commands/signal-link.ts';

/** How long the phone has to scan, and how long an outcome is kept for the page to read. */
export const WAIT_FOR_PHONE_MS = 5 * 60_000;
const KEEP_OUTCOME_MS = 10 * 60_000;
/** The store's slot outlives the wait by this much, so that the instance holding it ends it first. */
const SLOT_SLACK_MS = 30_000;
/** Links waiting for a phone at once in this process. */
const MAX_LINKS = 200;
/** Link starts one user may make in a window (a start that fails counts too). */
export const LINK_STARTS_PER_USER = 5;
const LINK_START_WINDOW_MS = 15 * 60_000;

/** What a start answers: the status, the body, and when to try again (429, 409). */
export interface LinkAnswer {
  readonly status: number;
  readonly body: { success: true; data: unknown } | { success: false; error: string };
  readonly retryAfterSeconds?: number;
}

type LinkState =
  | { readonly status: 'starting'; readonly answer: Promise<LinkAnswer>; readonly expiresAt: number }
  | { readonly status: 'pending'; readonly uri: string; readonly expiresAt: number }
  | { readonly status: 'linked'; readonly account: string; readonly expiresAt: number }
  | { readonly status: 'failed'; readonly reason: string; readonly expiresAt: number };

const refused = (status: number, error: string, retryAfterSeconds?: number): LinkAnswer => ({ status, body: { success: false, error }, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
const secondsUntil = (at: number) => Math.max(1, Math.ceil((at - Date.now()) / 1000));
const pendingAnswer = (uri: string): LinkAnswer => ({ status: 200, body: { success: true, data: { status: 'pending', uri } } });

export interface SignalLinks {
  /** Starts a link of the user's app-messenger, or joins the one under way; resolves to the answer. */
  start(userId: string, appMessenger: AppMessengerView, correlationId: string): Promise<LinkAnswer>;
  /** What the page shows of the app-messenger's link (`none` when there is none in this process). */
  view(appMessengerId: string): Record<string, unknown>;
  close(): Promise<void>;
}

export const signalLinks = (ctx: RelayContext, rpcOf: () => SignalRpc, log: Logger): SignalLinks => {
  const links = new Map<string, LinkState>();
  const starts = ctx.limits.limiter(LINK_START_WINDOW_MS);
  let rpc: SignalRpc | undefined;
  let closing = false;

  const sweep = (now: number) => {
    for (const [id, state] of links) if (state.expiresAt < now) links.delete(id);
  };
  const open = () => [...links.values()].filter((state) => state.status === 'starting' || state.status === 'pending').length;

  /** Gives the store's slot back (the link ended); a closing process leaves it to expire. */
  const end = async (appMessengerId: string, linkId: string, outcome: LinkOutcome) => {
    if (closing) return;
    try {
      await handleCommand(
        ctx.store,
        signalLinkStreamName(appMessengerId),
        signalLinkDecider,
        { type: 'EndSignalLink', data: { linkId, outcome: outcome.ok ? 'linked' : 'failed', reason: outcome.ok ? null : outcome.reason, now: new Date() } },
        { actor: 'system:signal-link', correlationId: linkId },
      );
    } catch (error) {
      log.warn({ err: error, appMessengerId }, 'signal link slot not given back (it expires by itself)');
    }
  };

  /** Counts the start against the user's budget, takes the store's slot, asks the daemon for the link, and settles the answer and the state. */
  const run = async (userId: string, appMessenger: AppMessengerView, correlationId: string, settle: (answer: LinkAnswer) => void) => {
    const id = appMessenger.id;
    const budget = await starts.consume(`signal-link:${userId}`, 1, LINK_STARTS_PER_USER);
    if (!budget.allowed) {
      links.delete(id);
      return settle(refused(429, 'Too many Signal links started: try again later', secondsUntil(budget.resetAt)));
    }
    const linkId = newId.signalLink();
    const now = new Date();
    let held: SignalLinkState['open'] = null;
    try {
      const reserved = await handleCommand(
        ctx.store,
        signalLinkStreamName(id),
        signalLinkDecider,
        (state) => {
          held = state.open;
          return { type: 'StartSignalLink' as const, data: { linkId, appMessengerId: id, appId: appMessenger.appId, userId, expiresAt: new Date(now.getTime() + WAIT_FOR_PHONE_MS + SLOT_SLACK_MS), now } };
        },
        { actor: `user:${userId}`, correlationId },
      );
      if (!reserved.ok) {
        links.delete(id);
        const holder = held as SignalLinkState['open'];
        return settle(refused(409, reserved.error.message, holder ? secondsUntil(holder.expiresAt) : 60));
      }
    } catch (error) {
      log.warn({ err: error, appMessengerId: id }, 'signal link slot not taken');
      links.delete(id);
      return settle(refused(503, 'Signal linking is not available right now: try again in a moment'));
    }

    rpc ??= rpcOf();
    let outcome: LinkOutcome;
    try {
      outcome = await linkSignalAccount(
        {
          store: ctx.store,
          apps: ctx.models.apps,
          rpc,
          show: (instructions) => {
            const uri = /sgnl:\/\/linkdevice\?\S+/.exec(instructions)?.[0];
            if (!uri) return;
            links.set(id, { status: 'pending', uri, expiresAt: Date.now() + WAIT_FOR_PHONE_MS });
            settle(pendingAnswer(uri));
          },
        },
        { appMessengerId: id, deviceName: 'Relay', timeoutMs: WAIT_FOR_PHONE_MS, now: () => new Date() },
      );
    } catch (error) {
      outcome = { ok: false, reason: linkFailureReason(error) ?? `signal-cli did not link: ${error instanceof Error ? error.message : String(error)}` };
    }
    const expiresAt = Date.now() + KEEP_OUTCOME_MS;
    links.set(id, outcome.ok ? { status: 'linked', account: outcome.account, expiresAt } : { status: 'failed', reason: outcome.reason, expiresAt });
    // A start that failed before the phone had a link to scan answers the failure (a settled answer stays as it was).
    settle(outcome.ok ? { status: 200, body: { success: true, data: { status: 'linked', account: outcome.account } } } : refused(502, outcome.reason));
    await end(id, linkId, outcome);
  };

  return {
    start: async (userId, appMessenger, correlationId) => {
      const now = Date.now();
      sweep(now);
      const current = links.get(appMessenger.id);
      if (current?.status === 'starting') return current.answer;
      if (current?.status === 'pending') return pendingAnswer(current.uri);
      if (open() >= MAX_LINKS) return refused(429, 'Too many links pending: try again later', 60);
      // The slot is this request's from here on, before anything is awaited (the user's budget included).
      let settled = false;
      let settleAnswer!: (answer: LinkAnswer) => void;
      const answer = new Promise<LinkAnswer>((resolve) => (settleAnswer = resolve));
      const settle = (given: LinkAnswer) => {
        if (settled) return;
        settled = true;
        settleAnswer(given);
      };
      links.set(appMessenger.id, { status: 'starting', answer, expiresAt: now + WAIT_FOR_PHONE_MS });
      void run(userId, appMessenger, correlationId, settle).catch((error: unknown) => {
        log.error({ err: error, appMessengerId: appMessenger.id }, 'signal link failed');
        links.delete(appMessenger.id);
        settle(refused(503, 'Signal linking is not available right now: try again in a moment'));
      });
      return answer;
    },
    view: (appMessengerId) => {
      sweep(Date.now());
      const state = links.get(appMessengerId);
      if (!state) return { status: 'none' };
      if (state.status === 'starting') return { status: 'starting' };
      const { expiresAt: _, ...shown } = state;
      return shown;
    },
    close: async () => {
      closing = true;
      starts.close();
      await rpc?.close();
    },
  };
};
