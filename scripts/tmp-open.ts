import pg from 'pg';
import { schemaSql } from '../infra/event-store/postgres/schema.ts';
import { migrateUnderLock } from '../infra/event-store/postgres/migration.ts';
const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  await migrateUnderLock(pool, 'relay_scale_14976', schemaSql('relay_scale_14976'));
  console.log('migrate', (performance.now() - t).toFixed(0), 'ms');
}
await pool.end();
