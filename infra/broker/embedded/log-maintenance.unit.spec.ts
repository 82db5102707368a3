import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { createLogMaintenance } from './log-maintenance.ts';
import { schemaSql, sql } from './schema.ts';

const HOUR = 3_600_000;

/**
 * A broker database in memory, how often the oldest record of a topic was read (`heads`) and the
 * topics' names (`nameReads`), and the topics whose next read of their oldest record fails.
 */
const setUp = (retentionMs: number) => {
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  db.exec(schemaSql);
  const heads: string[] = [];
  const failing = new Set<string>();
  let nameReads = 0;
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    if (source === sql.topicNames) {
      const all = statement.all.bind(statement);
      statement.all = (() => (nameReads++, all())) as typeof statement.all;
    }
    if (source !== sql.head) return statement;
    const get = statement.get.bind(statement);
    statement.get = ((topic: string) => {
      heads.push(topic);
      if (failing.delete(topic)) throw new Error('disk I/O error');
      return get(topic);
    }) as typeof statement.get;
    return statement;
  }) as typeof db.prepare;
  const errors: unknown[] = [];
  const maintenance = createLogMaintenance(db, createGroupCommit(db, { mapError: (e) => e }), {
    consumedRetentionMs: HOUR,
    idRetentionMs: HOUR,
    topicPolicy: (topic) => (topic.startsWith('inbound.') ? { partitions: 1, retentionMs } : { partitions: 1 }),
    chunk: 100,
    onError: (error) => errors.push(error),
  });
  const insert = db.prepare("INSERT INTO records (topic, offset, key, value, headers, record_id, due_at, timestamp) VALUES (?, ?, NULL, ?, '{}', NULL, NULL, ?)");
  return { db, heads, maintenance, insert, failing, errors, nameReads: () => nameReads };
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

  it('given the topics, when passes follow each other, then their names are read at every twelfth pass, and a topic created since is looked at by that pass', async () => {
    const { db, heads, maintenance, nameReads } = setUp(24 * HOUR);
    for (let i = 0; i < 100; i++) db.prepare('INSERT INTO topics (name) VALUES (?)').run(`inbound.app_${i}`);
    await maintenance.prune();
    db.prepare('INSERT INTO topics (name) VALUES (?)').run('inbound.app_new');
    for (let pass = 2; pass <= 12; pass++) await maintenance.prune();
    expect(nameReads()).toBe(1);
    expect(heads).toHaveLength(100);
    await maintenance.prune();
    expect(nameReads()).toBe(2);
    expect(heads.slice(100)).toEqual(['inbound.app_new']);
  });

  it('given a queue a group consumed, when no group consumes it any more, then the next pass looks at it, and later passes by its time', async () => {
    const { db, heads, maintenance } = setUp(24 * HOUR);
    db.prepare('INSERT INTO topics (name) VALUES (?)').run('inbound.c');
    db.prepare("INSERT INTO group_offsets (group_id, topic, next_offset) VALUES ('g', 'inbound.c', 0)").run();
    await maintenance.prune();
    await maintenance.prune();
    expect(heads).toEqual(['inbound.c', 'inbound.c']);
    db.prepare('DELETE FROM group_offsets').run();
    await maintenance.prune();
    await maintenance.prune();
    expect(heads).toEqual(['inbound.c', 'inbound.c', 'inbound.c']);
  });

  it('given a queue a group consumes created after the names were read, when the next pass runs, then it is looked at', async () => {
    const { db, heads, maintenance } = setUp(24 * HOUR);
    await maintenance.prune();
    db.prepare('INSERT INTO topics (name) VALUES (?)').run('inbound.d');
    db.prepare("INSERT INTO group_offsets (group_id, topic, next_offset) VALUES ('g', 'inbound.d', 0)").run();
    await maintenance.prune();
    expect(heads).toEqual(['inbound.d']);
  });

  it('given a look at a queue that fails, when the next pass runs, then that queue is looked at again', async () => {
    const { db, heads, maintenance, failing, errors } = setUp(24 * HOUR);
    for (const name of ['inbound.a', 'inbound.b']) db.prepare('INSERT INTO topics (name) VALUES (?)').run(name);
    failing.add('inbound.b');
    await maintenance.prune();
    expect(errors).toHaveLength(1);
    await maintenance.prune();
    expect(heads).toEqual(['inbound.a', 'inbound.b', 'inbound.b']);
    await maintenance.prune();
    expect(heads).toHaveLength(3);
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
