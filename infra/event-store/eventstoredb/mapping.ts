/**
 * Pure mappings between the EventStore port and EventStoreDB (KurrentDB): expected versions and
 * revisions, $all commit positions and global positions, the namespace that prefixes every stream
 * name, the server-side stream-name filter, the metadata that carries an imported recordedAt and
 * the event's tags, and the client-side filter. No I/O here: the adapter's modules and their unit
 * specs use these.
 */
import { categoryOf, type EventFilter, type EventMetadata, type EventTagger, type ExpectedVersion, type RecordedEvent } from '../port.ts';
import { tagsOf } from '../tags.ts';

/** The `expectedRevision` of `@eventstore/db-client` (its AppendExpectedRevision). */
export type EsdbExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;
/** Its CurrentRevision: the revision (0-based) of the stream's last event, or no stream. */
export type EsdbCurrentRevision = 'no_stream' | bigint;

/** Port versions are 1-based counts (0n = no stream); ESDB revisions are 0-based event numbers. */
export const toExpectedRevision = (expected: ExpectedVersion): EsdbExpectedRevision => {
  switch (expected) {
    case 'any':
    case 'no_stream':
    case 'stream_exists':
      return expected;
    default:
      if (typeof expected !== 'bigint' || expected < 0n) throw new RangeError(`Invalid expected version ${String(expected)}`);
      return expected === 0n ? 'no_stream' : expected - 1n;
  }
};

/** The port version of a stream whose last event has ESDB revision `current` (0n for no stream). */
export const versionOfRevision = (current: EsdbCurrentRevision | undefined): bigint =>
  typeof current === 'bigint' && current >= 0n ? current + 1n : 0n;

/** Whether a stream at `version` satisfies `expected` (for an append of no events, checked by a read). */
export const satisfiesExpected = (expected: ExpectedVersion, version: bigint): boolean => {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return version === 0n;
    case 'stream_exists':
      return version > 0n;
    default:
      return version === expected;
  }
};

/**
 * Global positions. ESDB orders $all by (commit, prepare) log positions; every event Relay writes
 * is one implicitly committed prepare of a gRPC append, whose commit and prepare positions are
 * both the event's own log position (explicit transactions, which share a commit position, exist
 * only in the legacy TCP protocol, and Relay never uses them). So the commit position alone is
 * unique and strictly increasing over a namespace's events.
 *
 * The port's positions start at 1n: a global position is `commit - origin`, where `origin` is the
 * commit position of the namespace's first event minus one, fixed once (stored in the namespace's
 * origin stream). The first event is at 1n; gaps between positions are the log bytes in between.
 */
export const toGlobalPosition = (commit: bigint, origin: bigint): bigint => commit - origin;
export const toCommitPosition = (globalPosition: bigint, origin: bigint): bigint => globalPosition + origin;

/** Relay's own streams in a namespace; never returned by reads or subscriptions, never appendable. */
export const RESERVED_PREFIX = '@relay-';
export const ORIGIN_STREAM = `${RESERVED_PREFIX}origin`;
export const CHECKPOINT_REGISTRY_STREAM = `${RESERVED_PREFIX}checkpoints`;
export const checkpointStream = (name: string): string => `${RESERVED_PREFIX}checkpoint-${name}`;

/** Event types of the reserved streams. */
export const ORIGIN_EVENT = 'RelayOrigin';
export const CHECKPOINT_EVENT = 'RelayCheckpoint';
export const CHECKPOINT_NAMED_EVENT = 'RelayCheckpointNamed';

const NAMESPACE = /^(?:[A-Za-z0-9]{1,63}[_.:])?$/;

/**
 * A namespace is prepended to every stream name: `r1_` turns `order-1` into `r1_order-1`. It is
 * empty, or 1 to 63 letters and digits followed by one separator, `_`, `.` or `:`. That shape
 * keeps namespaces apart: no namespace is a prefix of another namespace's stream names. (The empty
 * namespace sees every non-system stream, so it must not share a server with namespaced Relays.)
 */
export const validateNamespace = (namespace: string): string => {
  if (!NAMESPACE.test(namespace)) {
    throw new RangeError(
      `Invalid EventStoreDB namespace ${JSON.stringify(namespace)}: 1 to 63 letters or digits, then '_', '.' or ':' (e.g. relay_)`,
    );
  }
  return namespace;
};

export interface StreamNames {
  readonly namespace: string;
  /** The ESDB stream name of a Relay stream. */
  qualify(streamName: string): string;
  /** The Relay stream name of an ESDB stream, or undefined when it is not one of the namespace's data streams. */
  unqualify(streamId: string): string | undefined;
}

export const streamNames = (namespace: string): StreamNames => ({
  namespace,
  qualify: (streamName) => namespace + streamName,
  unqualify: (streamId) => {
    if (!streamId.startsWith(namespace)) return undefined;
    const name = streamId.slice(namespace.length);
    if (name === '' || name.startsWith('$') || name.startsWith(RESERVED_PREFIX)) return undefined;
    return name;
  },
});

/** A stream name callers may use: not empty, not a system stream, not one of Relay's own. */
export const validateStreamName = (streamName: string): string => {
  if (typeof streamName !== 'string' || streamName === '') throw new RangeError('A stream name must be a non-empty string');
  if (streamName.startsWith('$')) throw new RangeError(`Stream ${streamName}: names starting with '$' are EventStoreDB system streams`);
  if (streamName.startsWith(RESERVED_PREFIX)) throw new RangeError(`Stream ${streamName}: names starting with '${RESERVED_PREFIX}' are reserved`);
  return streamName;
};

/** Whether an event belongs to the namespace's data (not a system event, not a reserved stream). */
export const isDataEvent = (names: StreamNames, streamId: string, type: string): boolean =>
  !type.startsWith('$') && names.unqualify(streamId) !== undefined;

/**
 * The client-side check of a filter on a Relay stream name, type, effective recordedAt and tags.
 * `tags` is asked for only when the filter names tags (they may have to be derived).
 */
export const matchesFilter = (
  filter: EventFilter | undefined,
  event: { readonly streamName: string; readonly type: string; readonly recordedAt: Date },
  tags: () => readonly string[] = () => [],
): boolean => {
  if (filter === undefined) return true;
  if (filter.categories !== undefined && !filter.categories.includes(categoryOf(event.streamName))) return false;
  if (filter.streams !== undefined && !filter.streams.includes(event.streamName)) return false;
  if (filter.types !== undefined && !filter.types.includes(event.type)) return false;
  const time = event.recordedAt.getTime();
  if (filter.since !== undefined && time < filter.since.getTime()) return false;
  if (filter.until !== undefined && time >= filter.until.getTime()) return false;
  if (filter.tags !== undefined) {
    const carried = tags();
    if (!filter.tags.some((tag) => carried.includes(tag))) return false;
  }
  return true;
};

/**
 * Escapes the regular-expression metacharacters of a literal. The server evaluates the filter
 * with .NET regular expressions: a backslash before any of these characters means the character
 * itself there as in JavaScript; other characters (letters, digits, `-`, `@`, `:`, non-ASCII)
 * are literal unescaped in both.
 */
export const escapeRegex = (literal: string): string => literal.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');

/**
 * The server-side filter of a read or subscription of the namespace: a stream-name regex (or an
 * event-type regex, outside a namespace, when only types are asked for). It pre-selects on the
 * server; the exact check (matchesFilter, isDataEvent) runs on the client for every event, so the
 * server's regex may be broader (.NET's `$` also matches before a final newline) but never narrower.
 */
export const serverFilterOf = (
  namespace: string,
  filter: EventFilter | undefined,
): { readonly filterOn: 'streamName' | 'eventType'; readonly regex: string } => {
  const alternatives = (list: readonly string[]) => `(?:${list.map(escapeRegex).join('|')})`;
  const ns = escapeRegex(namespace);
  if (filter?.streams !== undefined && filter.streams.length > 0) {
    return { filterOn: 'streamName', regex: `^${ns}${alternatives(filter.streams)}$` };
  }
  if (filter?.categories !== undefined && filter.categories.length > 0) {
    return { filterOn: 'streamName', regex: `^${ns}${alternatives(filter.categories)}(?:-|$)` };
  }
  if (namespace === '' && filter?.types !== undefined && filter.types.length > 0) {
    return { filterOn: 'eventType', regex: `^${alternatives(filter.types)}$` };
  }
  return { filterOn: 'streamName', regex: namespace === '' ? `^(?!\\$|${RESERVED_PREFIX})` : `^${ns}(?!${RESERVED_PREFIX})` };
};

/** Where an imported event's recordedAt travels in its ESDB metadata (stripped on read). */
export const RECORDED_AT_KEY = '$relay.recordedAt';
/**
 * Where an event's tags travel in its ESDB metadata (stripped on read), with the version of the
 * tagger that derived them: `{ "version": "3", "tags": ["app:1"] }`. The server never filters on
 * them; reads check them on the client, after the server-side filters.
 */
export const TAGS_KEY = '$relay.tags';
const RESERVED_METADATA_KEYS = [RECORDED_AT_KEY, TAGS_KEY];

/** Tags as stored with an event, and the tagger version that derived them. */
export interface StoredTags {
  readonly version: string;
  readonly tags: readonly string[];
}

/** The ESDB metadata of an event: the port's metadata, plus the imported recordedAt and the tags if any. */
export const encodeMetadata = (metadata: EventMetadata | undefined, recordedAt: Date | undefined, tags?: StoredTags): Record<string, unknown> => {
  for (const key of RESERVED_METADATA_KEYS) {
    if (metadata !== undefined && Object.hasOwn(metadata, key)) throw new RangeError(`Event metadata must not use the reserved key ${key}`);
  }
  const encoded: Record<string, unknown> = { ...metadata };
  if (recordedAt !== undefined) {
    if (!(recordedAt instanceof Date) || Number.isNaN(recordedAt.getTime())) throw new RangeError('recordedAt is an invalid Date');
    encoded[RECORDED_AT_KEY] = recordedAt.toISOString();
  }
  if (tags !== undefined && tags.tags.length > 0) encoded[TAGS_KEY] = { version: tags.version, tags: tags.tags };
  return encoded;
};

/** The port's metadata, the effective recordedAt (imported, else the server's `created`) and the stored tags. */
export const decodeMetadata = (raw: unknown, created: Date): { metadata: EventMetadata; recordedAt: Date; tags: StoredTags | undefined } => {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw) || raw instanceof Uint8Array) {
    return { metadata: {}, recordedAt: created, tags: undefined };
  }
  const { [RECORDED_AT_KEY]: imported, [TAGS_KEY]: stored, ...metadata } = raw as Record<string, unknown>;
  const time = typeof imported === 'string' ? new Date(imported) : undefined;
  return { metadata, recordedAt: time !== undefined && !Number.isNaN(time.getTime()) ? time : created, tags: storedTags(stored) };
};

const storedTags = (value: unknown): StoredTags | undefined => {
  const candidate = value as { version?: unknown; tags?: unknown } | null | undefined;
  if (typeof candidate?.version !== 'string' || !Array.isArray(candidate.tags) || !candidate.tags.every((tag) => typeof tag === 'string')) return undefined;
  return { version: candidate.version, tags: candidate.tags as string[] };
};

/**
 * The tags of an event for the current tagger: those stored with it when the same tagger version
 * derived them, else derived now (the history cannot be rewritten: ESDB derives on read what the
 * other stores derive again when the version changes). No tagger, no tags.
 */
export const currentTags = (tagger: EventTagger | undefined, stored: StoredTags | undefined, event: RecordedEvent): readonly string[] => {
  if (tagger === undefined) return [];
  if (stored !== undefined && stored.version === tagger.version) return stored.tags;
  return tagsOf(tagger, { streamName: event.streamName, type: event.type, data: event.data });
};

/** The size a page or batch counts for an event: its data and metadata as JSON text, UTF-8 bytes. */
export const eventBytes = (event: RecordedEvent): number =>
  Buffer.byteLength(JSON.stringify(event.data ?? null), 'utf8') + Buffer.byteLength(JSON.stringify(event.metadata), 'utf8');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ESDB event ids are UUIDs. */
export const validateEventId = (id: string): string => {
  if (typeof id !== 'string' || !UUID.test(id)) throw new RangeError(`Event id ${JSON.stringify(id)} is not a UUID (EventStoreDB requires UUID event ids)`);
  return id;
};

/** Checkpoint positions are stored as decimal strings. */
export const parsePosition = (value: unknown): bigint | undefined => {
  if (typeof value !== 'string' || !/^(?:0|[1-9][0-9]*)$/.test(value)) return undefined;
  return BigInt(value);
};

/** The fields of the client's recorded event (RecordedEvent of `@eventstore/db-client`) that Relay reads. */
export interface EsdbRecordedEvent {
  readonly streamId: string;
  readonly id: string;
  readonly revision: bigint;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: unknown;
  readonly created: Date;
  /** Present on $all reads, and on stream reads from servers >= 22.6. */
  readonly position?: { readonly commit: bigint; readonly prepare: bigint } | undefined;
}

/** What servers send as the position of an event they have none for (ulong.MaxValue, i.e. -1). */
const NO_POSITION = 2n ** 64n - 1n;

/** The $all commit position of an event read from a stream or $all; throws when the server sent none. */
export const commitOf = (event: EsdbRecordedEvent): bigint => {
  const commit = event.position?.commit;
  if (commit === undefined || commit === NO_POSITION) {
    throw new Error('The EventStoreDB server sends no log position with stream reads: Relay needs EventStoreDB 22.6 or later');
  }
  return commit;
};

/** The port's event, or undefined when the ESDB event is not one of the namespace's data events. */
export const toRecordedEvent = (names: StreamNames, event: EsdbRecordedEvent, origin: bigint): RecordedEvent | undefined => {
  const streamName = names.unqualify(event.streamId);
  if (streamName === undefined || event.type.startsWith('$')) return undefined;
  const commit = commitOf(event);
  const { metadata, recordedAt } = decodeMetadata(event.metadata, event.created);
  return {
    id: event.id,
    type: event.type,
    data: event.data,
    metadata,
    streamName,
    streamVersion: event.revision + 1n,
    globalPosition: toGlobalPosition(commit, origin),
    recordedAt,
  };
};

/** The tags stored with an ESDB event (undefined when it has none). */
export const storedTagsOf = (event: EsdbRecordedEvent): StoredTags | undefined => decodeMetadata(event.metadata, event.created).tags;
