/*
 * WAL checkpoint thresholds (`PRAGMA wal_autocheckpoint`, in frames of 4 KiB) of Relay's SQLite
 * connections. A checkpoint copies up to the whole WAL into the database file and syncs it:
 * milliseconds during which the committing thread does nothing else. Of several connections on one
 * file, the one with the lowest threshold does nearly every checkpoint, so the threads that serve
 * requests leave them to the one that delivers.
 */

/** SQLite's default: for the connection that should do the checkpoints. */
export const CHECKPOINT_PAGES = 1000;

/** For the other connections: a checkpoint only when the WAL is four times as long (16 MB), when nobody else did one. */
export const LATE_CHECKPOINT_PAGES = 4000;
