import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { RecordedEvent } from '../../../infra/event-store/port.ts';
import type { RelayContext } from '../../services/context.ts';
import { appTag, tagsOf } from '../../history/event-tags.ts';
import { toPublicEvent } from '../../history/public-event.ts';
import { AUTH_ERRORS, requireCaller, sendRateLimited } from '../auth-guard.ts';
import { scopeEvent } from '../event-scope.ts';
import { storeEventHistory } from '../event-stream/store-event-history.ts';
import { EventHub } from '../event-stream/event-hub.ts';
import { ScopedStream } from '../event-stream/scoped-stream.ts';
import { openSse, type SseResponse } from '../event-stream/sse-response.ts';
import { buckets } from '../buckets.ts';
import { type Limiter } from '../../services/limiter.ts';
import { errorBody, eventsHeaders, eventsQuery, eventsResponse } from '../schemas.ts';
import { LimitStoreUnavailableError } from '../../../infra/limits/port.ts';

export const EVENTS_ERRORS = {
  badAfter: 'Invalid after. Must be a non-negative integer event position',
  badFollow: 'Invalid follow. Must be true or false',
  storeFailed: 'Failed to read events',
  tooManyForKey: 'Too many open event streams for this API key',
  tooManyForUser: 'Too many open event streams for this user',
  tooMany: 'Too many open event streams',
} as const;

const HEARTBEAT_MS = 15_000;
/** What a stream may have queued for a slow reader, and buffer while it catches up, before it is ended. */
const MAX_QUEUED_BYTES = 2 * 1024 * 1024;
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** Adds to a count by key, forgetting it at zero. */
const count = (counts: Map<string, number>, key: string, by: number) => {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
};

/** `after` from the query or `Last-Event-ID` (a reconnecting EventSource sends it). */
const parseAfter = (query: Record<string, unknown>, lastEventId: unknown): bigint | undefined => {
  const raw = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : (query.after ?? '0');
  return typeof raw === 'string' && /^\d{1,19}$/.test(raw) ? BigInt(raw) : undefined;
};

/** One SSE frame: the position as id (to resume from), the type as event name, the event as data. */
const frame = (event: RecordedEvent, data: unknown) =>
  `id: ${event.globalPosition}\nevent: ${event.type}\ndata: ${JSON.stringify(toPublicEvent(event, data))}\n\n`;

/**
 * `GET /api/v1/events`: the history of the key's apps as Server-Sent Events, for auditors and
 * analytics consumers. From `after` (or `Last-Event-ID`), the events of the key's apps in global
 * order, read from the store by their app tags (no other tenant's event is read); `follow=false`
 * ends once the history up to the request is sent, otherwise the stream goes on with new events
 * from the process's one live feed (event-hub.ts). Authenticated like poll; one unit of the poll
 * budget per request; at most EVENTS_MAX_STREAMS_PER_KEY open streams per key and
 * EVENTS_MAX_STREAMS_PER_USER per user (429), and EVENTS_MAX_STREAMS per process (503), of which a
 * fifth is kept for users who hold none: a few accounts cannot take a process's streams from all. No secret, key hash or sealed body in any event. A
 * stream ends at once when its key is deleted or one of its apps is.
 */
export const eventsRoute =
  (ctx: RelayContext, limiter: Limiter): FastifyPluginAsync =>
  async (app) => {
    // Relay's server has no Fastify logger (request-log.ts): lines about a request name its reqId.
    const log = ctx.log.child({ component: 'http' });
    const history = storeEventHistory(ctx.store);
    const hub = new EventHub(history, tagsOf, ctx.log.child({ component: 'event-hub' }));
    const responses = new Set<SseResponse>();
    const perKey = new Map<string, number>();
    const perUser = new Map<string, number>();
    /** Streams users who hold some may have in all: the rest is for users who hold none. */
    const heldByHolders = ctx.config.EVENTS_MAX_STREAMS - Math.ceil(ctx.config.EVENTS_MAX_STREAMS / 5);
    const tooMany = (reply: FastifyReply, error: string) => {
      ctx.metrics.rateLimitRejections.inc({ kind: 'events' });
      return reply.code(429).header('X-RateLimit-Remaining', '0').header('X-RateLimit-Reset', String(Date.now() + 1000)).header('Retry-After', '1').send({ error });
    };
    /**
     * A seat among the key's and among the user's streams, or the refusal's words. While the
     * shared store cannot be reached the process's own counts (checked before) are the caps.
     */
    let seatsFailing = false;
    const takeSeats = async (credentialId: string, userId: string): Promise<{ release(): void } | string> => {
      const store = ctx.limits.seats;
      const taken: [string, string][] = [];
      const release = () => {
        for (const [group, seat] of taken) void store.release(group, seat).catch(() => undefined);
      };
      try {
        const byKey = `events:key:${credentialId}`;
        const keySeat = await store.take(byKey, ctx.config.EVENTS_MAX_STREAMS_PER_KEY);
        if (keySeat === undefined) return EVENTS_ERRORS.tooManyForKey;
        taken.push([byKey, keySeat]);
        const byUser = `events:user:${userId}`;
        const userSeat = await store.take(byUser, ctx.config.EVENTS_MAX_STREAMS_PER_USER);
        if (userSeat === undefined) {
          release();
          return EVENTS_ERRORS.tooManyForUser;
        }
        taken.push([byUser, userSeat]);
        seatsFailing = false;
      } catch (error) {
        if (!(error instanceof LimitStoreUnavailableError)) throw error;
        if (!seatsFailing) log.warn({ reason: error.message }, 'event stream caps: the shared store cannot be reached; this instance counts alone');
        seatsFailing = true;
      }
      return { release };
    };
    // Open streams end when the server closes (a long-lived response would hold shutdown up).
    app.addHook('preClose', async () => {
      for (const response of responses) response.end('the server is shutting down');
      await hub.stop();
    });

    app.get(
      '/events',
      {
        schema: {
          summary: 'Stream the history of the key’s apps as Server-Sent Events',
          querystring: eventsQuery,
          headers: eventsHeaders,
          response: { 200: eventsResponse, 400: errorBody, 401: errorBody, 403: errorBody, 429: errorBody, 503: errorBody },
        },
        // The query is read by hand below so that its errors carry the route's own words.
        validatorCompiler: () => (data) => ({ value: data }),
      },
      async (request, reply) => {
        const caller = requireCaller(ctx, request, reply, 403);
        if (!caller) return reply;
        const query = request.query as Record<string, unknown>;
        const after = parseAfter(query, request.headers['last-event-id']);
        if (after === undefined) return reply.code(400).send({ error: EVENTS_ERRORS.badAfter });
        const followRaw = query.follow ?? 'true';
        if (followRaw !== 'true' && followRaw !== 'false') return reply.code(400).send({ error: EVENTS_ERRORS.badFollow });
        if (caller.appIds.length === 0) return reply.code(401).send({ error: AUTH_ERRORS.noApps });
        const credentialId = caller.credential.credentialId;
        const decided = limiter.consume(buckets.poll(credentialId), 1, ctx.config.RATE_LIMIT_POLL_PER_MIN);
        const decision = decided instanceof Promise ? await decided : decided;
        if (!decision.allowed) return sendRateLimited(ctx, 'poll', reply, decision.resetAt);
        if ((perKey.get(credentialId) ?? 0) >= ctx.config.EVENTS_MAX_STREAMS_PER_KEY) return tooMany(reply, EVENTS_ERRORS.tooManyForKey);
        const userId = caller.credential.userId;
        const ofUser = perUser.get(userId) ?? 0;
        if (ofUser >= ctx.config.EVENTS_MAX_STREAMS_PER_USER) return tooMany(reply, EVENTS_ERRORS.tooManyForUser);
        if (responses.size >= ctx.config.EVENTS_MAX_STREAMS || (ofUser > 0 && responses.size >= heldByHolders)) return reply.code(503).send({ error: EVENTS_ERRORS.tooMany });

        const appIds = new Set(caller.appIds);
        const tags = new Set(caller.appIds.map(appTag));
        const frameOf = (event: RecordedEvent) => {
          const scoped = scopeEvent(event, appIds);
          return scoped ? frame(event, scoped.data) : undefined;
        };
        // The key presented must still find the credential: deleted, or the old key of a roll whose overlap has ended, the stream ends.
        const stillAllowed = () =>
          ctx.models.credentials.byKeyHash(caller.keyHash)?.credentialId === credentialId && caller.appIds.every((appId) => ctx.models.apps.isLive(appId));

        let head: bigint | undefined;
        try {
          if (followRaw === 'false') head = await history.head();
          else await hub.start();
        } catch (error) {
          log.error({ reqId: request.id, err: error }, 'event stream: store unavailable');
          return reply.code(503).send({ error: EVENTS_ERRORS.storeFailed });
        }

        // The caps per key and per user hold across every instance on the same store (docs/limits.md).
        const seats = await takeSeats(credentialId, userId);
        if (typeof seats === 'string') return tooMany(reply, seats);
        const sse = openSse(reply, { maxQueuedBytes: MAX_QUEUED_BYTES, heartbeatMs: HEARTBEAT_MS });
        responses.add(sse);
        count(perKey, credentialId, +1);
        count(perUser, userId, +1);
        sse.onClose(() => {
          responses.delete(sse);
          count(perKey, credentialId, -1);
          count(perUser, userId, -1);
          seats.release();
        });
        const stream = new ScopedStream(credentialId, appIds, tags, sse, frameOf, stillAllowed, MAX_BUFFERED_BYTES, after);
        const tagList = [...tags];
        try {
          if (head !== undefined) {
            // The history up to the request, then the end.
            for (;;) {
              const page = await history.page(stream.position, tagList);
              const upTo = page.filter((event) => event.globalPosition <= head!);
              for (const event of upTo) stream.writeHistory(event);
              await sse.drained();
              if (sse.closed || upTo.length === 0 || upTo.length < page.length) break;
            }
            sse.end();
            return reply;
          }
          let attachment = hub.attach(stream);
          sse.onClose(() => attachment.detach());
          for (;;) {
            const page = await history.page(stream.position, tagList);
            let caughtUp = page.length === 0;
            for (const event of page) {
              if (event.globalPosition > attachment.from) {
                caughtUp = true;
                break;
              }
              stream.writeHistory(event);
            }
            if (!caughtUp && page[page.length - 1]!.globalPosition >= attachment.from) caughtUp = true;
            await sse.drained();
            if (sse.closed) break;
            if (!caughtUp) continue;
            if (!stream.lostBuffer) {
              stream.goLive();
              break;
            }
            // More was committed meanwhile than the buffer holds: catch up again, to the hub's position now.
            attachment.detach();
            stream.resetBuffer();
            attachment = hub.attach(stream);
          }
        } catch (error) {
          if (!sse.closed) log.error({ reqId: request.id, err: error }, 'event stream: read failed');
          sse.end(EVENTS_ERRORS.storeFailed);
        }
        return reply;
      },
    );
  };
