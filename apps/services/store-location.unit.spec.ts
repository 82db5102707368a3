import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeStoreLocation, parseStoreLocation, StoreLocationError } from './store-location.ts';

describe('store locations (relay events copy --from/--to)', () => {
  it('reads a SQLite file, a directory standing for its events.db, relative or absolute', () => {
    expect(parseStoreLocation('sqlite:./data/events.db')).toEqual({ kind: 'sqlite', file: path.resolve('data/events.db') });
    expect(parseStoreLocation('sqlite:/var/relay')).toEqual({ kind: 'sqlite', file: '/var/relay/events.db' });
    expect(parseStoreLocation('sqlite:///var/relay/copy.db')).toEqual({ kind: 'sqlite', file: '/var/relay/copy.db' });
  });

  it('reads PostgreSQL with its schema parameter taken out of the connection string', () => {
    expect(parseStoreLocation('postgres://u:pw@db:5432/relay?schema=relay_2&sslmode=disable')).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://u:pw@db:5432/relay?sslmode=disable',
      schema: 'relay_2',
    });
    expect(parseStoreLocation('postgresql://db/test')).toEqual({ kind: 'postgres', connectionString: 'postgresql://db/test', schema: 'relay' });
  });

  it('reads EventStoreDB and KurrentDB connection strings as they are', () => {
    expect(parseStoreLocation('esdb://127.0.0.1:2113?tls=false')).toEqual({ kind: 'eventstoredb', connectionString: 'esdb://127.0.0.1:2113?tls=false' });
    expect(parseStoreLocation('kurrentdb+discover://a:2113')).toEqual({ kind: 'eventstoredb', connectionString: 'kurrentdb+discover://a:2113' });
  });

  it('refuses anything else, without echoing a password', () => {
    expect(() => parseStoreLocation('mysql://u:secret@h/db')).toThrow(new StoreLocationError('Invalid store URL mysql://***@h/db: use sqlite:<file>, postgres://… or esdb://…'));
    expect(() => parseStoreLocation('sqlite:')).toThrow(StoreLocationError);
    expect(() => parseStoreLocation('postgres://u:secret@h/db?schema=1bad')).toThrow(
      new StoreLocationError('Invalid store URL postgres://***@h/db?schema=1bad: schema must be a PostgreSQL identifier'),
    );
    expect(() => parseStoreLocation('./data')).toThrow(StoreLocationError);
  });

  it('describes a location without its password', () => {
    expect(describeStoreLocation(parseStoreLocation('postgres://u:secret@h/db?schema=s'))).toBe('postgres://***@h/db (schema s)');
  });
});
