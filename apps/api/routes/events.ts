import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { RecordedEvent } from '../../../infra/event-store/port.ts';
import type { RelayContext } from '../../shared/context.ts';
import { toPublicEvent } from '../../shared/public-event.ts';
import { requireCaller, sendRateLimited } from '../auth-guard.ts';
import { scopeEvent } from '../event-scope.ts';
import type { RateLimiter } from '../rate-limiter.ts';

export const EVENTS_ERRORS = {
  badAfter: 'Invalid after. Must be a non-negative integer event position',
  badFollow: 'Invalid follow. Must be true or false',
  storeFailed: 'Failed to read events',
} as const;

const HEARTBEAT_MS = 15_000;
const PAGE = 500;

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
 * analytics consumers, in every mode (embedded or Kafka). From `after` (or `Last-Event-ID`), the
 * events of the key's apps in global order; `follow=false` ends once the history up to the
 * request is sent, otherwise the stream stays open with new events as they are committed.
 * Authenticated like poll; one unit of the poll budget per request. No secrets in any event.
 */
export const eventsRoute =
  (ctx: RelayContext, limiter: RateLimiter): FastifyPluginAsync =>
  async (app) => {
    // Open streams end when the server closes (a long-lived response would hold shutdown up).
    const open = new Set<{ end(): void }>();
    app.addHook('preClose', (done) => {
      for (const stream of open) stream.end();
      done();
    });
    app.get(
      '/events',
      { schema: { summary: 'Stream the history of the key’s apps as Server-Sent Events (query: after, follow)' } },
      async (request, reply) => {
        const caller = requireCaller(ctx, request, reply, 403);
        if (!caller) return reply;
        const query = request.query as Record<string, unknown>;
        const after = parseAfter(query, request.headers['last-event-id']);
        if (after === undefined) return reply.code(400).send({ error: EVENTS_ERRORS.badAfter });
        const followRaw = query.follow ?? 'true';
        if (followRaw !== 'true' && followRaw !== 'false') return reply.code(400).send({ error: EVENTS_ERRORS.badFollow });
        const decision = limiter.consume(`poll:${caller.credential.credentialId}`, 1, ctx.config.RATE_LIMIT_POLL_PER_MIN);
        if (!decision.allowed) return sendRateLimited(ctx, 'poll', reply, decision.resetAt);

        const appIds = new Set(caller.appIds);
        const visible = (events: RecordedEvent[]) =>
          events.flatMap((event) => {
            const scoped = scopeEvent(event, appIds);
            return scoped ? [frame(event, scoped.data)] : [];
          });

        let head: bigint;
        try {
          head = await ctx.store.headPosition();
        } catch (error) {
          request.log.error({ err: error }, 'event stream: store unavailable');
          return reply.code(503).send({ error: EVENTS_ERRORS.storeFailed });
        }
        const stream = openStream(reply);
        open.add(stream);
        stream.onClose(() => open.delete(stream));
        if (followRaw === 'false') {
          try {
            for (let from = after; from < head; ) {
              const page = await ctx.store.readAll({ after: from, limit: PAGE });
              if (page.length === 0) break;
              const upTo = page.filter((event) => event.globalPosition <= head);
              await stream.write(visible(upTo).join(''));
              from = page[page.length - 1]!.globalPosition;
              if (upTo.length < page.length) break;
            }
          } catch (error) {
            if (!stream.closed()) request.log.error({ err: error }, 'event stream: read failed');
          }
          stream.end();
          return reply;
        }
        const subscription = ctx.store.subscribe({
          after,
          batchSize: PAGE,
          handler: async (events) => {
            if (!stream.closed()) await stream.write(visible(events).join(''));
          },
          onError: (error) => {
            request.log.error({ err: error }, 'event stream: subscription failed');
            stream.end();
          },
        });
        stream.onClose(() => void subscription.stop());
        return reply;
      },
    );
  };

/** The SSE response on the raw socket, with the headers the hooks set (security headers) and backpressure. */
const openStream = (reply: FastifyReply) => {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.write('retry: 2000\n\n');
  let closed = false;
  const closers: Array<() => void> = [];
  const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const run of closers) run();
  };
  raw.on('close', close);
  return {
    closed: () => closed,
    onClose: (run: () => void) => (closed ? run() : closers.push(run)),
    write: (text: string): Promise<void> =>
      text === '' || closed
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            if (raw.write(text)) resolve();
            else {
              const done = () => {
                raw.off('drain', done);
                raw.off('close', done);
                resolve();
              };
              raw.once('drain', done);
              raw.once('close', done);
            }
          }),
    end: () => {
      close();
      raw.end();
    },
  };
};
