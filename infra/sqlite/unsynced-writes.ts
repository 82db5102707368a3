import type Database from 'better-sqlite3';
import type { SqliteSynchronous } from './open-sqlite.ts';

/**
 * Runs a write in a transaction of its own without the WAL sync that `synchronous=full` (or
 * `extra`) makes every commit wait for, for bookkeeping that a power cut may roll back without
 * harm: a consumer's committed offset (an older one means the records after it are handed again,
 * as after a crash before the commit, and consumers are idempotent), a lease (it runs out). The
 * write still reaches the `-wal` file before it returns, so it survives a process crash, and the
 * next synced commit on the file (a publish, a pop) syncs it with its own frames.
 *
 * SQLite reads `PRAGMA synchronous` when the statement setting it is compiled, so it is issued
 * afresh around each such write (a few microseconds; the sync it saves costs about 100 µs of CPU
 * and up to milliseconds of waiting on this VM).
 */
export const unsyncedWrites = (db: Database.Database, level: SqliteSynchronous): (<T>(write: () => T) => T) => {
  if (level !== 'full' && level !== 'extra') return (write) => write();
  const restore = `synchronous = ${level}`;
  return (write) => {
    db.pragma('synchronous = normal');
    try {
      return write();
    } finally {
      db.pragma(restore);
    }
  };
};
