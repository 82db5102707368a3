import { createRequire } from 'node:module';
import { expectKafkajsSource } from './kafkajs-source.ts';

/**
 * Incremental fetch sessions (Kafka's KIP-227) for the kafkajs consumers of chosen clients.
 *
 * kafkajs 2.2.4 (its last release) sends every fetch without a session (`session_id` 0, epoch -1):
 * each fetch names every partition its consumer reads, and each answer lists every one of them,
 * whether anything came or not. A consumer that follows thousands of one-partition topics (the
 * inbox tail follows every app it pops from) spends its idle time encoding and decoding those
 * lists: 2,000 followed topics cost 6.9 % of a core at a fetch wait of 1,000 ms (session 35,
 * `scripts/bench/tail-idle.ts`).
 *
 * With a session the broker remembers the partitions and their fetch offsets. A later fetch names
 * only what changed since the last one (a partition added, one whose offset or size moved) and the
 * partitions to forget (paused or no longer read); the answer lists only the partitions that have
 * records or whose state changed. An idle fetch names nothing and is answered with nothing. This is
 * what the Java client's `FetchSessionHandler` does (apache/kafka,
 * clients/src/main/java/org/apache/kafka/clients/FetchSessionHandler.java) and the rules are those
 * of the broker's `FetchSession.scala` (core/src/main/scala/kafka/server/FetchSession.scala):
 * - a full fetch with epoch 0 opens a session; its `session_id` (with epoch 0) closes that one
 *   first; an answer with `session_id` 0 means the broker keeps no session (its cache is full);
 * - each incremental fetch carries the session's id and the next epoch (1, 2, ... wrapping to 1);
 * - a partition left out of an incremental fetch keeps the offset it had in the session, so a
 *   partition is sent again exactly when kafkajs's wanted offset or size differs from that;
 * - an answer with a top-level error (`FETCH_SESSION_ID_NOT_FOUND`, `INVALID_FETCH_SESSION_EPOCH`,
 *   or any other) or a failed request ends the session; the next fetch is full again.
 *
 * kafkajs hands the answer's partitions to its consumer as before: it maps each answered partition
 * to its own request, which still holds every partition it wants, so fewer answered partitions
 * mean fewer (empty) batches and nothing else. Brokers that cannot do sessions (Fetch below v7)
 * are sent kafkajs's own fetch. A fetch that starts while another of the same broker connection is
 * in flight (kafkajs does not do that, but nothing forbids it) goes without a session, as kafkajs's.
 *
 * Applied to kafkajs's own `Broker.prototype.fetch`, once per thread, for the clients whose
 * `clientId` was passed to `useFetchSessions`; if a later kafkajs changed the method, this says so
 * instead of patching blindly.
 */

interface FetchPartition {
  partition: number;
  fetchOffset: string;
  maxBytes: number;
}

interface FetchTopic {
  topic: string;
  partitions: FetchPartition[];
}

interface FetchArguments {
  replicaId?: number;
  isolationLevel?: number;
  maxWaitTime?: number;
  minBytes?: number;
  maxBytes?: number;
  topics: FetchTopic[];
  rackId?: string;
}

interface FetchResponse {
  errorCode?: number;
  sessionId?: number;
  responses: Array<{ topicName: string; partitions: unknown[] }>;
}

interface BuiltRequest {
  request: { apiVersion: number };
}

interface Broker {
  connectionPool: { clientId: string; host: string; port: number };
  lookupRequest(apiKey: number, definitions: unknown): (options: Record<string, unknown>) => BuiltRequest;
  fetch(this: Broker, args: FetchArguments): Promise<FetchResponse>;
}

/** What the broker holds for one session: each partition's fetch offset and size, by `topic\0partition`. */
interface Session {
  id: number;
  /** The epoch of the next incremental fetch. */
  epoch: number;
  partitions: Map<string, { topic: string; partition: number; fetchOffset: string; maxBytes: number }>;
  /** A fetch of this session is in flight. */
  busy: boolean;
  /** Until when fetches go without a session, after the broker refused one. */
  offUntil: number;
}

/** The lowest Fetch version with sessions. */
const FIRST_SESSION_VERSION = 7;
/** The highest epoch (a signed 32-bit integer). */
const MAX_EPOCH = 2_147_483_647;
/** How long a broker connection that answered a fetch with an error it did not explain fetches without a session. */
export const SESSION_PAUSE_MS = 30_000;
/** The top-level errors that only say the session is gone. */
const SESSION_ERRORS = new Set([70 /* FETCH_SESSION_ID_NOT_FOUND */, 71 /* INVALID_FETCH_SESSION_EPOCH */]);

/** Parts of the source of `Broker.prototype.fetch` this relies on, as kafkajs 2.2.4 writes it. */
const EXPECTED_FETCH = ['this.lookupRequest(apiKeys.Fetch, requests.Fetch)', 'this[PRIVATE.SEND_REQUEST]('];
/** Parts of kafkajs's Fetch v11 request: it takes the session's fields. */
const EXPECTED_V11 = ['sessionId', 'sessionEpoch', 'forgottenTopics'];

/** The sessions of each client that has them, by broker address. */
const clients = new Map<string, Map<string, Session>>();
let applied = false;

/**
 * Gives the consumers of the kafkajs client with this `clientId` fetch sessions, in this thread;
 * the returned function takes them back (the client is closed). One session per broker address:
 * a consumer that replaces another of the client (the inbox tail restarts its consumer to follow
 * a topic) goes on with its session, so a restart neither leaves a session behind in the broker's
 * cache (1,000 slots by default, `max.incremental.fetch.session.cache.slots`) nor fetches
 * everything again. So a client with sessions must run one consumer at a time.
 */
export const useFetchSessions = (clientId: string): (() => void) => {
  apply();
  const own = new Map<string, Session>();
  clients.set(clientId, own);
  return () => {
    if (clients.get(clientId) === own) clients.delete(clientId);
  };
};

const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** The epoch after this one (the broker's `nextEpoch`: after 2^31 - 1 comes 1; 0 opens a session). */
export const nextEpoch = (epoch: number): number => (epoch >= MAX_EPOCH ? 1 : epoch + 1);

/** Groups partitions by topic, as the request writes them. */
const byTopic = <P extends { topic: string }>(partitions: Iterable<P>, entry: (p: P) => unknown): Array<{ topic: string; partitions: unknown[] }> => {
  const topics = new Map<string, unknown[]>();
  for (const p of partitions) {
    let list = topics.get(p.topic);
    if (!list) topics.set(p.topic, (list = []));
    list.push(entry(p));
  }
  return [...topics].map(([topic, list]) => ({ topic, partitions: list }));
};

const apply = (): void => {
  if (applied) return;
  const require = createRequire(import.meta.url);
  const Broker = require('kafkajs/src/broker/index.js') as { prototype: Broker };
  const apiKeys = require('kafkajs/src/protocol/requests/apiKeys.js') as { Fetch: number };
  const { requests } = require('kafkajs/src/protocol/requests/index.js') as { requests: { Fetch?: unknown } };
  const v11 = require('kafkajs/src/protocol/requests/fetch/v11/request.js') as unknown;
  const original = Broker.prototype.fetch;
  const sendRequest = Object.getOwnPropertySymbols(Broker.prototype).find((symbol) => symbol.description === 'private:Broker:sendRequest');
  expectKafkajsSource('Broker.fetch', original, EXPECTED_FETCH, 'fetch-sessions.ts');
  expectKafkajsSource('Fetch v11 request', v11, EXPECTED_V11, 'fetch-sessions.ts');
  if (sendRequest === undefined || requests.Fetch === undefined)
    throw new Error('kafkajs Broker has no private sendRequest or no Fetch request: check infra/broker/kafka/fetch-sessions.ts against this kafkajs version');
  applied = true;
  const send = (broker: Broker, request: BuiltRequest): Promise<FetchResponse> =>
    (broker as unknown as Record<symbol, (request: BuiltRequest) => Promise<FetchResponse>>)[sendRequest]!.call(broker, request);

  Broker.prototype.fetch = async function fetch(this: Broker, args: FetchArguments): Promise<FetchResponse> {
    const { clientId, host, port } = this.connectionPool;
    const sessions = clients.get(clientId);
    if (!sessions) return original.call(this, args);
    const address = `${host}:${port}`;
    let session = sessions.get(address);
    if (!session) sessions.set(address, (session = { id: 0, epoch: 0, partitions: new Map(), busy: false, offUntil: 0 }));
    if (session.busy || Date.now() < session.offUntil) return original.call(this, args);

    const wanted = new Map<string, { topic: string; partition: number; fetchOffset: string; maxBytes: number }>();
    for (const { topic, partitions } of args.topics)
      for (const { partition, fetchOffset, maxBytes } of partitions) wanted.set(keyOf(topic, partition), { topic, partition, fetchOffset, maxBytes });

    const full = session.epoch === 0;
    const sent = full
      ? [...wanted.values()]
      : [...wanted].filter(([key, want]) => {
          const held = session.partitions.get(key);
          return held === undefined || held.fetchOffset !== want.fetchOffset || held.maxBytes !== want.maxBytes;
        }).map(([, want]) => want);
    const forgotten = full ? [] : [...session.partitions].filter(([key]) => !wanted.has(key)).map(([, held]) => held);

    const fetch = this.lookupRequest(apiKeys.Fetch, requests.Fetch);
    const built = fetch({
      replicaId: args.replicaId,
      isolationLevel: args.isolationLevel,
      maxWaitTime: args.maxWaitTime ?? 5_000,
      minBytes: args.minBytes ?? 1,
      maxBytes: args.maxBytes ?? 10_485_760,
      rackId: args.rackId ?? '',
      sessionId: session.id,
      sessionEpoch: session.epoch,
      topics: byTopic(sent, ({ partition, fetchOffset, maxBytes }) => ({ partition, fetchOffset, maxBytes })),
      forgottenTopics: byTopic(forgotten, ({ partition }) => partition),
    });
    if (built.request.apiVersion < FIRST_SESSION_VERSION) return original.call(this, args);

    session.busy = true;
    let response: FetchResponse;
    try {
      response = await send(this, built);
    } catch (error) {
      // The broker may or may not have taken the epoch: start over with a full fetch.
      session.epoch = 0;
      throw error;
    } finally {
      session.busy = false;
    }
    if (response.errorCode !== undefined && response.errorCode !== 0) {
      // The session is gone (evicted, or an epoch the broker did not expect), or the broker would
      // not keep one: the next fetch is full, and an error not about sessions pauses them a while.
      session.epoch = 0;
      session.partitions = new Map();
      if (!SESSION_ERRORS.has(response.errorCode)) session.offUntil = Date.now() + SESSION_PAUSE_MS;
      return { ...response, responses: [] };
    }
    if (full) {
      session.id = response.sessionId ?? 0;
      session.epoch = session.id === 0 ? 0 : 1;
    } else session.epoch = nextEpoch(session.epoch);
    session.partitions = wanted;
    return response;
  };
};
