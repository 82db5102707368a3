import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { CHECKPOINT_PAGES } from './checkpoint-pages.ts';

/**
 * Page cache of each connection, in KiB: SQLite's own default. better-sqlite3 builds SQLite with
 * 16 MB per connection instead (`SQLITE_DEFAULT_CACHE_SIZE=-16000`), and role `all` opens five
 * connections (`events.db` and `broker.db` in each thread, the simulator's file): after the bench's
 * send load their caches had grown to most of the RSS over 200 MB (issue 28: 193–225 MB right after
 * the load, 229–234 MB ten seconds later; with 2 MB, 177–189 and 185–202 MB, at the same send rate).
 */
export const CACHE_KIB = 2000;

/** `PRAGMA synchronous` levels (see docs/durability.md). */
export type SqliteSynchronous = 'off' | 'normal' | 'full' | 'extra';
const synchronousLevels: readonly SqliteSynchronous[] = ['off', 'normal', 'full', 'extra'];

export interface OpenSqliteOptions {
  /** Database file; its directory is created if missing. `:memory:` works for a single connection. */
  readonly path: string;
  /** Default 'full'. */
  readonly synchronous?: SqliteSynchronous | undefined;
  /** How long a write waits for another connection's lock before failing. Default 5000. */
  readonly busyTimeoutMs?: number | undefined;
  /**
   * WAL frames after which a commit of this connection copies the WAL into the database
   * (`PRAGMA wal_autocheckpoint`). Default 1000, SQLite's. Of several connections on one file,
   * the one with the lowest threshold does nearly every checkpoint.
   */
  readonly autoCheckpointPages?: number | undefined;
  /** DDL that brings an empty file to `schemaVersion` (it sets `PRAGMA user_version` itself). */
  readonly schemaSql: string;
  readonly schemaVersion: number;
}

/**
 * Opens a SQLite file the way Relay's embedded stores share it between processes: busy timeout
 * first (the pragmas after it may wait for a lock), WAL journal (checked), the synchronous level,
 * a page cache of CACHE_KIB,
 * 64-bit integers as bigint, and the schema created or refused by `user_version` in one
 * `BEGIN IMMEDIATE` transaction. Invalid options throw RangeError; a file that cannot be opened
 * throws the underlying error, for the adapter to wrap in its own "unavailable" error.
 */
export const openSqlite = (options: OpenSqliteOptions): Database.Database => {
  const synchronous = options.synchronous ?? 'full';
  if (!synchronousLevels.includes(synchronous)) throw new RangeError(`Unknown synchronous level ${synchronous}`);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) throw new RangeError('busyTimeoutMs must be an integer >= 0');
  const autoCheckpointPages = options.autoCheckpointPages ?? CHECKPOINT_PAGES;
  if (!Number.isSafeInteger(autoCheckpointPages) || autoCheckpointPages < 1) throw new RangeError('autoCheckpointPages must be an integer >= 1');
  const inMemory = options.path === ':memory:';
  let db: Database.Database | undefined;
  try {
    if (!inMemory) fs.mkdirSync(path.dirname(path.resolve(options.path)), { recursive: true });
    db = new Database(options.path);
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal' && !inMemory) throw new Error(`journal_mode is ${String(mode)}, not wal`);
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma(`wal_autocheckpoint = ${autoCheckpointPages}`);
    db.pragma(`cache_size = -${CACHE_KIB}`);
    db.defaultSafeIntegers(true);
    const opened = db;
    opened
      .transaction(() => {
        const version = Number(opened.pragma('user_version', { simple: true }));
        if (version > options.schemaVersion) throw new Error(`schema version ${version} is newer than this Relay (${options.schemaVersion})`);
        if (version < options.schemaVersion) opened.exec(options.schemaSql);
      })
      .immediate();
    return opened;
  } catch (error) {
    db?.close();
    throw error;
  }
};

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
