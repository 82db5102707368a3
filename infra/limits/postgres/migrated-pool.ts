import pg from 'pg';
import { sqlStateOf } from '../../event-store/postgres/errors.ts';
import { quoteSchema } from '../../event-store/postgres/identifiers.ts';
import { migrateUnderLock } from '../../event-store/postgres/migration.ts';
import { LimitStoreUnavailableError } from '../port.ts';

/**
 * A small pool of connections to the deployment's PostgreSQL for the limit stores: their tables are
 * made before the first query (under the event store's migration lock for the schema: one
 * migration at a time), and every failure but a statement's own (a bug) becomes
 * LimitStoreUnavailableError, which the limiters answer by counting alone.
 */
export class MigratedPool {
  readonly pool: pg.Pool;
  /** The schema, quoted for SQL. */
  readonly schema: string;
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(
    options: { readonly connectionString: string; readonly schema?: string; readonly max: number; readonly connectionTimeoutMs?: number },
    private readonly ddl: (schema: string) => string,
    private readonly what: string,
  ) {
    this.schemaName = options.schema ?? 'relay';
    this.schema = quoteSchema(this.schemaName);
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: options.max, connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000 });
    this.pool.on('error', () => undefined); // an idle client's lost connection: the next query gets a new one
  }

  private readonly schemaName: string;

  get isClosed(): boolean {
    return this.closed;
  }

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.closed) throw new LimitStoreUnavailableError(`The PostgreSQL ${this.what} is closed`);
    try {
      this.ready ??= migrateUnderLock(this.pool, this.schemaName, this.ddl(this.schema)).catch((error: unknown) => {
        this.ready = undefined;
        throw error;
      });
      await this.ready;
      return await operation();
    } catch (error) {
      const state = sqlStateOf(error);
      if ((state !== undefined && ['22', '23', '42'].includes(state.slice(0, 2))) || error instanceof LimitStoreUnavailableError || !(error instanceof Error)) throw error;
      throw new LimitStoreUnavailableError(`PostgreSQL ${this.what} failure${state ? ` (${state})` : ''}: ${error.message}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
