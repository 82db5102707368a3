import path from 'node:path';
import { redactUserInfo, type Config } from './config.ts';

/**
 * Where an event store is: what `relay events copy --from/--to` take as a URL, and what the
 * configuration (EVENT_STORE with its settings) names.
 *
 * - `sqlite:<file>`: an embedded store file (`sqlite:./data/events.db`); a path to a directory
 *   means its `events.db`.
 * - `postgres://…` or `postgresql://…`: a PostgreSQL database; the query parameter `schema` names
 *   the schema (default `relay`), the rest is the connection string.
 * - `esdb://…`, `esdb+discover://…`, `kurrentdb://…`: EventStoreDB / KurrentDB.
 */
export type StoreLocation =
  | { readonly kind: 'sqlite'; readonly file: string }
  | { readonly kind: 'postgres'; readonly connectionString: string; readonly schema: string }
  | { readonly kind: 'eventstoredb'; readonly connectionString: string; readonly namespace?: string };

export class StoreLocationError extends Error {
  override readonly name = 'StoreLocationError';
}

const SCHEMA = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** `file` resolved; a directory (or a path without extension) stands for its events.db. */
const sqliteFile = (given: string): string => {
  const resolved = path.resolve(given);
  return path.extname(resolved) === '' ? path.join(resolved, 'events.db') : resolved;
};

export const parseStoreLocation = (url: string): StoreLocation => {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'sqlite': {
      const rest = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
      if (rest === '') throw new StoreLocationError(`Invalid store URL ${url}: sqlite: needs a file, e.g. sqlite:./data/events.db`);
      return { kind: 'sqlite', file: sqliteFile(rest) };
    }
    case 'postgres':
    case 'postgresql': {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new StoreLocationError(`Invalid store URL ${redactUserInfo(url)}: not a URL`);
      }
      const schema = parsed.searchParams.get('schema') ?? 'relay';
      if (!SCHEMA.test(schema)) throw new StoreLocationError(`Invalid store URL ${redactUserInfo(url)}: schema must be a PostgreSQL identifier`);
      parsed.searchParams.delete('schema');
      return { kind: 'postgres', connectionString: parsed.toString(), schema };
    }
    case 'esdb':
    case 'esdb+discover':
    case 'kurrentdb':
    case 'kurrentdb+discover':
      return { kind: 'eventstoredb', connectionString: url };
    default:
      throw new StoreLocationError(`Invalid store URL ${redactUserInfo(url)}: use sqlite:<file>, postgres://… or esdb://…`);
  }
};

/** The store the configuration names. */
export const configuredStoreLocation = (config: Config): StoreLocation => {
  switch (config.EVENT_STORE) {
    case 'sqlite':
      return { kind: 'sqlite', file: path.join(config.dataDir, 'events.db') };
    case 'postgres':
      return { kind: 'postgres', connectionString: config.DATABASE_URL!, schema: config.DATABASE_SCHEMA };
    case 'eventstoredb':
      return { kind: 'eventstoredb', connectionString: config.EVENTSTORE_URL!, ...(config.EVENTSTORE_NAMESPACE ? { namespace: config.EVENTSTORE_NAMESPACE } : {}) };
  }
};

/** A location fit for a log line or a report: no password. */
export const describeStoreLocation = (location: StoreLocation): string => {
  switch (location.kind) {
    case 'sqlite':
      return `sqlite:${location.file}`;
    case 'postgres':
      return `${redactUserInfo(location.connectionString)} (schema ${location.schema})`;
    case 'eventstoredb':
      return redactUserInfo(location.connectionString);
  }
};

