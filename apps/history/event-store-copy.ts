import { isDeepStrictEqual } from 'node:util';
import { NoKeyVaultError } from '../../infra/event-store/data-keys.ts';
import { ExpectedVersionConflictError, type EventStore, type NewEvent, type RecordedEvent, type StoredDataKey } from '../../infra/event-store/port.ts';

/**
 * Copies the whole history of one event store into another (`relay events copy`): every event in
 * global order, with its id, stream, stream version, type, data, metadata and recorded time; then
 * the data keys that exist (those of messages in flight, so that they stay readable after the
 * move; events whose keys were destroyed are copied as they are); then the named checkpoints
 * (publisher, provisioner, ...), translated to the target's positions; then a verification that
 * both histories are equal, event by event, and both sets of keys, key by key. Tags are not
 * copied: the target derives its own, with its own tagger, as the events are appended.
 *
 * Resumable: after each page the target records, as the checkpoint `relay-copy:<id of the source's
 * first event>`, how far the source was copied. A new run resumes there; the events of the page
 * that was in flight are found in the target (same ids at the same stream versions) and skipped.
 * A target that holds events and no such checkpoint is refused: a copy goes into an empty store.
 * Keys are imported in id order, and an import leaves a key that is there already unchanged, so a
 * new run imports again what an interrupted one had not.
 *
 * Global positions are the target's own (PostgreSQL's may have gaps where SQLite's have none):
 * order is preserved, numbers are not. That is why checkpoints are translated, not copied: the
 * target's checkpoint covers exactly the events that the source's covered.
 */
export interface CopyProgress {
  /** Source position reached. */
  readonly position: bigint;
  readonly head: bigint;
  readonly copied: number;
  readonly skipped: number;
}

export interface CopyReport {
  /** Events appended to the target by this run. */
  readonly copied: number;
  /** Events found already copied (by an interrupted earlier run) and skipped. */
  readonly skipped: number;
  /** Events of the source up to the head read at the start, and of the target afterwards. */
  readonly sourceEvents: number;
  readonly targetEvents: number;
  readonly streams: number;
  /** The source's head position when the copy started: what was copied. */
  readonly sourceHead: bigint;
  readonly targetHead: bigint;
  /** Checkpoints written to the target: name → [source position, target position]. */
  readonly checkpoints: Record<string, [bigint, bigint]>;
  /** Data keys found equal in both stores after the copy. */
  readonly keys: number;
}

export class CopyError extends Error {
  override readonly name = 'CopyError';
}

const COPY_CHECKPOINT_PREFIX = 'relay-copy:';
const PAGE = 1000;
/** Data keys listed (and imported) at a time. */
const KEY_PAGE = 1000;
/** At most this many events in one append (a long run of one stream is split). */
const APPEND_CHUNK = 500;

const toNewEvent = (event: RecordedEvent): NewEvent => ({
  id: event.id,
  type: event.type,
  data: event.data,
  metadata: event.metadata,
  recordedAt: event.recordedAt,
});

const describe = (event: RecordedEvent) => `${event.streamName}@${event.streamVersion} (${event.type}, id ${event.id}, position ${event.globalPosition})`;

/** What must be equal between an event and its copy (positions aside). */
const sameEvent = (a: RecordedEvent, b: RecordedEvent): boolean =>
  a.id === b.id &&
  a.streamName === b.streamName &&
  a.streamVersion === b.streamVersion &&
  a.type === b.type &&
  a.recordedAt.getTime() === b.recordedAt.getTime() &&
  isDeepStrictEqual(a.data, b.data) &&
  isDeepStrictEqual(a.metadata, b.metadata);

/** Runs of consecutive events of one stream, at most APPEND_CHUNK long: one append each. */
const runsOf = (events: readonly RecordedEvent[]): RecordedEvent[][] => {
  const runs: RecordedEvent[][] = [];
  for (const event of events) {
    const run = runs.at(-1);
    if (run && run[0]!.streamName === event.streamName && run.length < APPEND_CHUNK) run.push(event);
    else runs.push([event]);
  }
  return runs;
};

export const copyEventStore = async (
  source: EventStore,
  target: EventStore,
  options: { onProgress?: (progress: CopyProgress) => void } = {},
): Promise<CopyReport> => {
  // Checkpoints first, then the head: every checkpoint read is at or below the head copied.
  const sourceCheckpoints = [...(await source.listCheckpoints())].filter(([name]) => !name.startsWith(COPY_CHECKPOINT_PREFIX));
  const sourceHead = await source.headPosition();
  const [first] = await source.readAll({ limit: 1 });
  if (!first) {
    const targetHead = await target.headPosition();
    if (targetHead !== 0n) throw new CopyError('The source store is empty and the target is not: nothing to copy, and the two differ');
    await copyKeys(source, target);
    const keys = await verifyKeys(source, target);
    return { copied: 0, skipped: 0, sourceEvents: 0, targetEvents: 0, streams: 0, sourceHead, targetHead, checkpoints: {}, keys };
  }
  const resumeName = `${COPY_CHECKPOINT_PREFIX}${first.id}`;
  const resumed = await target.readCheckpoint(resumeName);
  if (resumed === undefined && (await target.headPosition()) !== 0n) {
    throw new CopyError('The target store already holds events, and no copy of this source to resume: copy into an empty store');
  }
  let after: bigint = resumed ?? 0n;
  // Marks the target as this copy's before its first event: an interrupted first page resumes too.
  if (resumed === undefined) await target.storeCheckpoint(resumeName, 0n);

  let copied = 0;
  let skipped = 0;
  const copyRun = async (run: RecordedEvent[]): Promise<void> => {
    const stream = run[0]!.streamName;
    const expected = run[0]!.streamVersion - 1n;
    try {
      await target.appendToStream(stream, run.map(toNewEvent), { expectedVersion: expected });
      copied += run.length;
      return;
    } catch (error) {
      if (!(error instanceof ExpectedVersionConflictError)) throw error;
    }
    // The stream is not where this run starts: an interrupted run copied some of it already.
    const existing = (await target.readStream(stream)).events;
    if (existing.length < Number(expected)) {
      throw new CopyError(`The target's stream ${stream} is at version ${existing.length}, behind the copy (${expected}): it was changed outside the copy`);
    }
    let rest = run;
    while (rest.length > 0 && existing.length >= Number(rest[0]!.streamVersion)) {
      const there = existing[Number(rest[0]!.streamVersion) - 1]!;
      if (there.id !== rest[0]!.id) throw new CopyError(`The target holds a different event at ${describe(there)} than the source (${describe(rest[0]!)})`);
      rest = rest.slice(1);
      skipped += 1;
    }
    if (rest.length > 0) {
      await target.appendToStream(stream, rest.map(toNewEvent), { expectedVersion: rest[0]!.streamVersion - 1n });
      copied += rest.length;
    }
  };

  while (after < sourceHead) {
    const page: RecordedEvent[] = (await source.readAll({ after, limit: PAGE })).filter((event) => event.globalPosition <= sourceHead);
    if (page.length === 0) break;
    for (const run of runsOf(page)) await copyRun(run);
    after = page.at(-1)!.globalPosition;
    await target.storeCheckpoint(resumeName, after);
    options.onProgress?.({ position: after, head: sourceHead, copied, skipped });
  }

  await copyKeys(source, target);

  const checkpoints: Record<string, [bigint, bigint]> = {};
  for (const [name, position] of sourceCheckpoints) {
    const translated = await translatePosition(source, target, position, sourceHead);
    await target.storeCheckpoint(name, translated);
    checkpoints[name] = [position, translated];
  }

  const verified = await verifyCopy(source, target, sourceHead);
  const keys = await verifyKeys(source, target);
  return { copied, skipped, ...verified, sourceHead, checkpoints, keys };
};

/** A page of a store's keys; none for a store that keeps no keys (EventStoreDB without a vault). */
const listKeys = async (store: EventStore, afterId: string | undefined): Promise<StoredDataKey[]> => {
  try {
    return await store.keys.list(afterId, KEY_PAGE);
  } catch (error) {
    if (error instanceof NoKeyVaultError) return [];
    throw error;
  }
};

/** Every key of the source into the target, page by page (keys there already are left as they are). */
const copyKeys = async (source: EventStore, target: EventStore): Promise<void> => {
  for (let afterId: string | undefined; ; ) {
    const page = await listKeys(source, afterId);
    if (page.length === 0) return;
    try {
      await target.keys.import(page);
    } catch (error) {
      if (error instanceof NoKeyVaultError) throw new CopyError(`The source holds data keys and the target keeps none: ${error.message}`);
      throw error;
    }
    afterId = page.at(-1)!.id;
  }
};

const describeKey = (key: StoredDataKey) =>
  `${key.id} (scope ${key.scope}, ${key.subject}, ${key.usesLeft}/${key.uses} uses left, expires ${key.expiresAt.toISOString()}${key.scopeRetired ? ', scope retired' : ''})`;

const sameKey = (a: StoredDataKey, b: StoredDataKey): boolean =>
  a.id === b.id &&
  a.scope === b.scope &&
  a.subject === b.subject &&
  a.wrapped === b.wrapped &&
  a.uses === b.uses &&
  a.usesLeft === b.usesLeft &&
  a.expiresAt.getTime() === b.expiresAt.getTime() &&
  a.scopeRetired === b.scopeRetired;

/** Lists both stores' keys side by side (both in id order): equal keys, none more in the target. Returns their number. */
const verifyKeys = async (source: EventStore, target: EventStore): Promise<number> => {
  let count = 0;
  let afterId: string | undefined;
  for (;;) {
    const page = await listKeys(source, afterId);
    const copies = await listKeys(target, afterId);
    for (let i = 0; i < Math.max(page.length, copies.length); i++) {
      const original = page[i];
      const copy = copies[i];
      if (original === undefined) throw new CopyError(`Verification failed: the target has a data key the source does not: ${describeKey(copy!)}`);
      if (copy !== undefined && copy.id < original.id) throw new CopyError(`Verification failed: the target has a data key the source does not: ${describeKey(copy)}`);
      if (copy === undefined || copy.id !== original.id) throw new CopyError(`Verification failed: the target lacks the data key ${describeKey(original)}`);
      if (!sameKey(original, copy)) throw new CopyError(`Verification failed: data key ${describeKey(original)} in the source is ${describeKey(copy)} in the target`);
    }
    count += page.length;
    if (page.length < KEY_PAGE) return count;
    afterId = page.at(-1)!.id;
  }
};

/** The target's position of a copied event (found by stream and version). */
const targetPositionOf = async (target: EventStore, event: RecordedEvent): Promise<bigint> => {
  const copy = (await target.readStream(event.streamName)).events[Number(event.streamVersion) - 1];
  if (!copy || copy.id !== event.id) throw new CopyError(`The target lacks the copy of ${describe(event)}`);
  return copy.globalPosition;
};

/**
 * A checkpoint says "every event at or below this position was handled". Its translation covers
 * the same events in the target: the target position of the source's event at that position, or,
 * when there is none, just below the copy of the next event (or the target's head after the last).
 */
const translatePosition = async (source: EventStore, target: EventStore, position: bigint, sourceHead: bigint): Promise<bigint> => {
  if (position <= 0n) return 0n;
  const [next] = await source.readAll({ after: position - 1n, limit: 1 });
  if (next && next.globalPosition === position) return targetPositionOf(target, next);
  if (next && next.globalPosition <= sourceHead) return (await targetPositionOf(target, next)) - 1n;
  return target.headPosition();
};

/** Reads both histories side by side: equal events in equal order, nothing more in the target. */
const verifyCopy = async (
  source: EventStore,
  target: EventStore,
  sourceHead: bigint,
): Promise<{ sourceEvents: number; targetEvents: number; streams: number; targetHead: bigint }> => {
  let sourceAfter = 0n;
  let targetAfter = 0n;
  let count = 0;
  const streams = new Set<string>();
  for (;;) {
    const page = (await source.readAll({ after: sourceAfter, limit: PAGE })).filter((event) => event.globalPosition <= sourceHead);
    if (page.length === 0) break;
    // The target's pages may end elsewhere (a page ends at a number of bytes, stored differently).
    const copies: RecordedEvent[] = [];
    for (let after = targetAfter; copies.length < page.length; ) {
      const more = await target.readAll({ after, limit: page.length - copies.length });
      if (more.length === 0) break;
      copies.push(...more);
      after = more.at(-1)!.globalPosition;
    }
    for (let i = 0; i < page.length; i++) {
      const original = page[i]!;
      const copy = copies[i];
      if (!copy) throw new CopyError(`Verification failed: the target has ${count + i} events, the source more (next: ${describe(original)})`);
      if (!sameEvent(original, copy)) throw new CopyError(`Verification failed at event ${count + i + 1}: source ${describe(original)}, target ${describe(copy)}`);
      streams.add(original.streamName);
    }
    count += page.length;
    sourceAfter = page.at(-1)!.globalPosition;
    targetAfter = copies.at(-1)!.globalPosition;
  }
  const extra = await target.readAll({ after: targetAfter, limit: 1 });
  if (extra.length > 0) throw new CopyError(`Verification failed: the target has events the source does not (first: ${describe(extra[0]!)})`);
  return { sourceEvents: count, targetEvents: count, streams: streams.size, targetHead: await target.headPosition() };
};
