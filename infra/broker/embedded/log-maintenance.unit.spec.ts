import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { createLogMaintenance } from './log-maintenance.ts';
import { schemaSql, sql } from './schema.ts';

const HOUR = 3_600_000;

/** A broker database in memory, and how often the oldest record of a topic was read. */
const setUp = (retentionMs: number) => {
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  db.exec(schemaSql);
  const heads: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    if (source !== sql.head) return statement;
    const get = statement.get.bind(statement);
    statement.get = ((topic: string) => (heads.push(topic), get(topic))) as typeof statement.get;
    return statement;
  }) as typeof db.prepare;
  const maintenance = createLogMaintenance(db, createGroupCommit(db, { mapError: (e) => e }), {
    consumedRetentionMs: HOUR,
    idRetentionMs: HOUR,
    topicPolicy: (topic) => (topic.startsWith('inbound.') ? { partitions: 1, retentionMs } : { partitions: 1 }),
    chunk: 100,
    onError: (error) => {
      throw error;
    },
  });
  const insert = db.prepare("INSERT INTO records (topic, offset, key, value, headers, record_id, due_at, timestamp) VALUES (?, ?, NULL, ?, '{}', NULL, NULL, ?)");
  return { db, heads, maintenance, insert };
};

describe('log maintenance: retention of topics no group consumes', () => {
  it('given many quiet inbound queues, when passes follow each other, then each queue is read once per retention, not once per pass', async () => {
    const { db, heads, maintenance, insert } = setUp(24 * HOUR);
    for (let i = 0; i < 500; i++) db.prepare('INSERT INTO topics (name) VALUES (?)').run(`inbound.app_${i}`);
    insert.run('inbound.app_1', 0n, 'x', BigInt(Date.now()));
    await maintenance.prune();
    expect(heads.length).toBe(500);
    await maintenance.prune();
    await maintenance.prune();
    expect(heads.length).toBe(500);
  });

  it('given a record older than the retention, when a pass runs, then it is deleted, and a record published after a look is deleted in its turn', async () => {
    const { db, maintenance, insert } = setUp(50);
    db.prepare('INSERT INTO topics (name) VALUES (?)').run('inbound.app_1');
    insert.run('inbound.app_1', 0n, 'old', BigInt(Date.now() - 1000));
    await maintenance.prune();
    const count = () => Number((db.prepare('SELECT count(*) AS n FROM records').get() as { n: bigint }).n);
    expect(count()).toBe(0);
    insert.run('inbound.app_1', 1n, 'new', BigInt(Date.now()));
    await maintenance.prune(); // too young yet: remembered until it can expire
    expect(count()).toBe(1);
    const deadline = Date.now() + 5000;
    while (count() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await maintenance.prune();
    }
    expect(count()).toBe(0);
  });
});
