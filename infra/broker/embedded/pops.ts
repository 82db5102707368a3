import type Database from 'better-sqlite3';
import type { GroupCommit } from '../../sqlite/group-commit.ts';
import type { ConsumedRecord, PopOptions } from '../port.ts';
import { toRecord, type Statements } from './statements.ts';

/**
 * Topics remembered as holding nothing due (see `Pops`); past this many, the longest remembered is
 * forgotten first. Each is an app's inbound queue looked at by polls or the webhook dispatcher: the
 * scale bench's 25,000 apps fit (about 130 bytes each). Session 30: it was 10,000, and all of them
 * were forgotten at once when it filled, so more apps than that asked SQLite again on every poll.
 */
const MAX_NOTHING_DUE_TOPICS = 50_000;

/**
 * The embedded broker's pops (its class comment tells how they behave) and its memory of the
 * topics a pop found nothing due in, which the broker makes forget a topic when a record may have
 * come to it.
 */
export interface Pops {
  /** Up to `max` (at least 1) records of `topic` that are due, deleted as they are returned. */
  pop(topic: string, max: number, accept: PopOptions['accept']): Promise<ConsumedRecord[]>;
  /** Whether `topic` is remembered as holding nothing due at `now`. */
  remembersNothingDue(topic: string, now: number): boolean;
  /** Whether any topic is remembered as holding nothing due. */
  remembersAny(): boolean;
  forget(topic: string): void;
  forgetAll(): void;
}

/** Runs a synchronous database operation of the broker (its SQLite failures become BrokerUnavailableError). */
export type Guard = <T>(operation: () => T) => T;

export const createPops = (db: Database.Database, s: Statements, guard: Guard, groupCommit: GroupCommit): Pops => {
  /**
   * Topics a pop found nothing due in, each with the time (epoch ms) its next record falls due,
   * Infinity when it holds none. Forgotten as the broker's class comment says.
   */
  const nothingDue = new Map<string, number>();

  const popTx = db.transaction((topic: string, max: number, reserved: string): ConsumedRecord[] =>
    s.popDue
      .all({ topic, now: Date.now(), max, reserved })
      .sort((a, b) => (a.offset < b.offset ? -1 : 1))
      .map(toRecord),
  );

  /** Offsets of each topic that pops of this process are offering to their `accept` right now. */
  const reservations = new Map<string, Set<bigint>>();
  const reservedJson = (topic: string): string => `[${[...(reservations.get(topic) ?? [])].join(',')}]`;

  /** Whether `topic` is remembered as holding nothing due at `now` (what `pop` and `knownEmpty` ask first). */
  const remembersNothingDue = (topic: string, now: number): boolean => now < (nothingDue.get(topic) ?? 0);
  /** Remembers that `topic` holds nothing due at `now`, until its earliest record falls due. */
  const rememberNothingDue = (topic: string, now: number): void => {
    if (nothingDue.size >= MAX_NOTHING_DUE_TOPICS) nothingDue.delete(nothingDue.keys().next().value!);
    // Every record of the topic is due later than now (none was due): the earliest of them, if any.
    const next = guard(() => s.nextDue.get(topic));
    nothingDue.set(topic, next === undefined || next === null ? Infinity : Number(next));
  };

  /** A pop that hands its records to `accept` first, and deletes them only once it resolved. */
  const popAccepted = async (topic: string, max: number, accept: NonNullable<PopOptions['accept']>): Promise<ConsumedRecord[]> => {
    const offered = guard(() => s.readDue.all({ topic, now: Date.now(), max, reserved: reservedJson(topic) }).map(toRecord));
    if (offered.length === 0) return [];
    let reserved = reservations.get(topic);
    if (!reserved) reservations.set(topic, (reserved = new Set()));
    for (const record of offered) reserved.add(record.offset);
    try {
      await accept(offered);
      const offsets = `[${offered.map((record) => record.offset).join(',')}]`;
      const taken = new Set(await groupCommit.enqueue(() => s.popOffsets.all({ topic, offsets })));
      return offered.filter((record) => taken.has(record.offset));
    } finally {
      for (const record of offered) reserved.delete(record.offset);
      if (reserved.size === 0 && reservations.get(topic) === reserved) reservations.delete(topic);
    }
  };

  return {
    async pop(topic, max, accept) {
      // Most polls find nothing: remembered, or a plain read says so without taking the write lock
      // (or the heavier read of what is due).
      const now = Date.now();
      if (remembersNothingDue(topic, now)) return [];
      if (guard(() => s.hasDue.get(topic, now)) === undefined) {
        rememberNothingDue(topic, now);
        return [];
      }
      if (accept !== undefined) return popAccepted(topic, max, accept);
      return groupCommit.enqueue(() => popTx(topic, max, reservedJson(topic)));
    },
    remembersNothingDue,
    remembersAny: () => nothingDue.size > 0,
    // Marked, not deleted: a topic forgotten on every record published to it and remembered again
    // by the next poll would be deleted and re-inserted each time, and V8 keeps each deleted entry
    // in the key's bucket chain until the table is rebuilt (every look-up of it grew slower).
    forget: (topic) => {
      if (nothingDue.has(topic)) nothingDue.set(topic, 0);
    },
    forgetAll: () => nothingDue.clear(),
  };
};
