import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../services/context.ts';
import { AUTH_ERRORS, requireCaller, sendRateLimited } from '../auth-guard.ts';
import { popRoundRobin } from '../poll-messages.ts';
import { topics } from '../../services/topology.ts';
import { buckets } from '../buckets.ts';
import type { LimitDecision, Limiter } from '../../services/limiter.ts';
import { errorBody, pollQuery, pollResponse, type PolledMessage, type PollResponse } from '../schemas.ts';

export const POLL_ERRORS = {
  outOfRange: 'Invalid limit. Must be between 1 and 50',
  notANumber: 'Invalid limit parameter',
  storeFailed: 'Failed to poll messages',
} as const;

const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 50;

/** `limit` as the interface reads it: absent → 10; not an integer → one error; out of 1..50 → the other. */
export const parseLimit = (raw: unknown): number | { error: string } => {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\s*[-+]?\d+\s*$/.test(raw)) return { error: POLL_ERRORS.notANumber };
  const limit = Number(raw);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) return { error: POLL_ERRORS.outOfRange };
  return limit;
};

/** What a poll of a key's live apps asks: kept per array of live apps (apps/api/authenticate.ts keeps one per key and change of the apps). */
interface PollPlan {
  /** The apps whose queues it pops: not those delivered by webhook. */
  readonly polled: readonly string[];
  readonly topics: readonly string[];
  /** The answer's `queue`. */
  readonly queue: string;
  /** The body of an empty answer, serialized once: the queue names every app (about 30 bytes each) and was serialized again on every empty poll. */
  readonly emptyBody: string;
}

const plans = new WeakMap<readonly string[], PollPlan>();

const planOf = (ctx: RelayContext, appIds: readonly string[]): PollPlan => {
  let plan = plans.get(appIds);
  if (!plan) {
    // An app delivered by webhook has its messages POSTed to it: a poll does not compete for them.
    const polled = appIds.filter((appId) => ctx.models.apps.app(appId)?.settings.deliveryType !== 'webhook');
    const queue = `poll:${appIds.join(',')}`;
    plan = { polled, topics: polled.map((appId) => topics.inbound(appId)), queue, emptyBody: JSON.stringify({ messages: [], count: 0, queue } satisfies PollResponse) };
    plans.set(appIds, plan);
  }
  return plan;
};

/** Whether the broker knows every one of the topics to hold nothing due now (an empty poll answered from memory). */
const allKnownEmpty = (ctx: RelayContext, names: readonly string[]): boolean => {
  const { broker } = ctx;
  if (broker.knownEmptyAll !== undefined) return broker.knownEmptyAll(names);
  if (broker.knownEmpty === undefined) return false;
  for (const name of names) if (!broker.knownEmpty(name)) return false;
  return true;
};

export const pollRoute =
  (ctx: RelayContext, limiter: Limiter): FastifyPluginAsyncZod =>
  async (app) => {
    // Relay's server has no Fastify logger (request-log.ts): lines about a request name its reqId.
    const log = ctx.log.child({ component: 'http' });
    /** Pops what the polled apps' queues hold, then answers (503 when nothing could be popped). */
    const popAndAnswer = async (request: FastifyRequest, reply: FastifyReply, polled: readonly string[], limit: number, answer: (messages: PolledMessage[]) => void) => {
      const { messages, keyIds, failure } = await popRoundRobin(ctx, polled, limit);
      if (failure !== undefined) {
        // What was popped before the failure is returned: a poll never loses what it popped.
        log.error({ reqId: request.id, err: failure, returned: messages.length }, 'poll failed');
        if (messages.length === 0) return reply.code(503).send({ error: POLL_ERRORS.storeFailed });
      }
      // The bodies returned are done: their keys are destroyed by the shredder (a release that
      // fails leaves them to the retention).
      if (keyIds.length > 0) void ctx.store.keys.release(keyIds).catch((error: unknown) => log.warn({ reqId: request.id, err: error }, 'poll: data keys not released'));
      answer(messages);
      return reply;
    };

    /** A poll the limit allowed (or its 429): an empty one the broker can answer from memory awaits nothing. */
    const pollWith = (request: FastifyRequest, reply: FastifyReply, appIds: readonly string[], limit: number, decision: LimitDecision) => {
      if (!decision.allowed) return void sendRateLimited(ctx, 'poll', reply, decision.resetAt);
      const plan = planOf(ctx, appIds);
      const answer = (messages: PolledMessage[]) => {
        ctx.metrics.pollRequests.inc();
        if (messages.length > 0) ctx.metrics.pollPopped.inc(messages.length);
        reply.code(200).header('X-RateLimit-Remaining', String(decision.remaining));
        if (messages.length === 0) reply.type('application/json; charset=utf-8').send(plan.emptyBody);
        else reply.send({ messages, count: messages.length, queue: plan.queue });
      };
      if (allKnownEmpty(ctx, plan.topics)) return answer([]);
      return popAndAnswer(request, reply, plan.polled, limit, answer);
    };

    app.get(
      '/messages/poll',
      {
        schema: {
          summary: 'Pop inbound messages (destructive read)',
          querystring: pollQuery.passthrough(),
          response: { 200: pollResponse, 400: errorBody, 401: errorBody, 403: errorBody, 429: errorBody, 503: errorBody },
        },
        // The query is read by hand below so that its errors carry the interface's words.
        validatorCompiler: () => (data) => ({ value: data }),
      },
      // Not async: the checks and an empty poll the broker can answer from memory await nothing
      // (most polls of an idle bot); a poll that may find messages goes on in `popAndAnswer`.
      (request, reply) => {
        const caller = requireCaller(ctx, request, reply, 403);
        if (!caller) return;
        const limit = parseLimit((request.query as Record<string, unknown>).limit);
        if (typeof limit !== 'number') return void reply.code(400).send(limit);
        if (caller.appIds.length === 0) return void reply.code(401).send({ error: AUTH_ERRORS.noApps });
        const decided = limiter.consume(buckets.poll(caller.credential.credentialId), 1, ctx.config.RATE_LIMIT_POLL_PER_MIN);
        // A shared limit answers later only when its slice is spent (apps/limits/sliced-limiter.ts).
        if (decided instanceof Promise) return decided.then((decision) => pollWith(request, reply, caller.appIds, limit, decision));
        return pollWith(request, reply, caller.appIds, limit, decided);
      },
    );
  };
