import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { DeliveryWithdrawnError, type DeliveryResult, type Messenger } from '../port.ts';
import { CACHE_KIB } from '../../sqlite/open-sqlite.ts';

export interface SimulatedDelivery {
  messageId: string;
  messenger: Messenger;
  from: string;
  contactId: string;
  text: string;
  groupId: string | null;
  attempt: number;
  ok: boolean;
  reason: string | null;
  at: number;
}

/** Deliveries the simulator keeps: the most recent ones (it stands for recipients' phones, not for an archive). */
export const SIMULATOR_KEEPS = 10_000;

/**
 * What the simulator remembers, in `simulator.db` of DATA_DIR so that the CLI and a running
 * server see the same: the last delivery attempts it was handed (at most SIMULATOR_KEEPS), and
 * the failures it was told to fake.
 */
export interface InjectedFailure {
  readonly reason: string;
  readonly permanent: boolean;
}

export interface SimulatedGroup {
  readonly groupId: string;
  /** The bot identity that created it. */
  readonly owner: string;
  readonly name: string;
  readonly inviteLink: string | null;
}

/** A delivery handed to the simulator, before it is counted and decided. */
export type HandedDelivery = Pick<SimulatedDelivery, 'messageId' | 'messenger' | 'from' | 'contactId' | 'text' | 'groupId'>;

/** How a handed delivery ends: given a way to take the next failure injected for its contact. */
export type DeliveryDecision = (takeFailure: () => InjectedFailure | undefined) => DeliveryResult;

interface Handing {
  readonly delivery: HandedDelivery;
  readonly decide: DeliveryDecision;
  readonly stillHeld: (() => boolean) | undefined;
  readonly resolve: (result: DeliveryResult) => void;
  readonly reject: (error: unknown) => void;
}

export class SimulatorStore {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly insertDelivery: Database.Statement;
  private readonly countAttempts: Database.Statement;
  private readonly takeFailure: Database.Transaction<(messenger: string, contactId: string) => InjectedFailure | undefined>;
  private readonly handOverAll: Database.Transaction<(handings: readonly Handing[]) => Array<DeliveryResult | undefined>>;
  private readonly pruneOld: Database.Statement;
  private recordedSincePrune = 0;
  /** Deliveries handed during this turn of the event loop: decided and recorded together after it. */
  private handings: Handing[] = [];

  constructor(
    dataDir: string,
    private readonly keeps = SIMULATOR_KEEPS,
  ) {
    fs.mkdirSync(dataDir, { recursive: true });
    this.db = new Database(path.join(dataDir, 'simulator.db'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    // A record of what a fake messenger was handed: losing its last lines to a power cut is harmless.
    this.db.pragma('synchronous = normal');
    this.db.pragma(`cache_size = -${CACHE_KIB}`);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS deliveries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL, messenger TEXT NOT NULL, from_address TEXT NOT NULL,
        contact_id TEXT NOT NULL, text TEXT NOT NULL, group_id TEXT, attempt INTEGER NOT NULL, ok INTEGER NOT NULL, reason TEXT, at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS deliveries_message ON deliveries(message_id);
      CREATE TABLE IF NOT EXISTS failures (
        messenger TEXT NOT NULL, contact_id TEXT NOT NULL, remaining INTEGER NOT NULL, reason TEXT NOT NULL,
        permanent INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (messenger, contact_id));
      CREATE TABLE IF NOT EXISTS groups (
        messenger TEXT NOT NULL, group_id TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL, invite_link TEXT,
        PRIMARY KEY (messenger, group_id));
      CREATE TABLE IF NOT EXISTS group_members (
        messenger TEXT NOT NULL, group_id TEXT NOT NULL, contact_id TEXT NOT NULL, role TEXT NOT NULL,
        PRIMARY KEY (messenger, group_id, contact_id));`);
    // Files of earlier versions have no permanent column: their failures were all transient.
    const columns = this.db.prepare('PRAGMA table_info(failures)').all() as Array<{ name: string }>;
    if (!columns.some((c) => c.name === 'permanent')) this.db.exec('ALTER TABLE failures ADD COLUMN permanent INTEGER NOT NULL DEFAULT 0');
    // Positional parameters: bound from a list, not looked up by name in an object made per delivery.
    this.insertDelivery = this.db.prepare(
      `INSERT INTO deliveries (message_id, messenger, from_address, contact_id, text, group_id, attempt, ok, reason, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.countAttempts = this.db.prepare('SELECT count(*) AS n FROM deliveries WHERE message_id = ?');
    this.pruneOld = this.db.prepare('DELETE FROM deliveries WHERE seq <= (SELECT max(seq) FROM deliveries) - ?');
    const select = this.db.prepare('SELECT remaining, reason, permanent FROM failures WHERE messenger = ? AND contact_id = ?');
    const decrement = this.db.prepare('UPDATE failures SET remaining = remaining - 1 WHERE messenger = ? AND contact_id = ?');
    const remove = this.db.prepare('DELETE FROM failures WHERE messenger = ? AND contact_id = ?');
    /** Takes the next failure injected for a contact; in a transaction of the caller's (its reads and its change go together). */
    const takeFailureIn = (messenger: string, contactId: string): InjectedFailure | undefined => {
      const rule = select.get(messenger, contactId) as { remaining: number; reason: string; permanent: number } | undefined;
      if (!rule) return undefined;
      if (rule.remaining > 0) {
        if (rule.remaining === 1) remove.run(messenger, contactId);
        else decrement.run(messenger, contactId);
      }
      return { reason: rule.reason, permanent: rule.permanent === 1 };
    };
    this.takeFailure = this.db.transaction(takeFailureIn);
    // A loop, not an arrow made in each call (see writeEach in infra/sqlite/group-commit.ts).
    this.handOverAll = this.db.transaction((handings: readonly Handing[]) => {
      const results: Array<DeliveryResult | undefined> = [];
      for (const { delivery, decide, stillHeld } of handings) {
        // Asked when the hand-off is made, not when it was queued: a process frozen in between (past
        // its hold on the record) makes no attempt of what another process holds now.
        if (stillHeld !== undefined && !stillHeld()) {
          results.push(undefined);
          continue;
        }
        // Counted in the transaction: an attempt of the same message earlier in it counts too.
        const attempt = this.attemptsOf(delivery.messageId) + 1;
        // Already in this transaction: no savepoint of its own per delivery.
        const result = decide(() => takeFailureIn(delivery.messenger, delivery.contactId));
        this.recordIn(delivery, attempt, result.ok, result.ok ? null : result.reason, Date.now());
        results.push(result);
      }
      return results;
    });
  }

  /**
   * Hands a delivery to the simulated messenger: counts its attempt, decides it (`decide` may take
   * a failure injected for its contact), and records it. The deliveries handed during one turn of
   * the event loop share one transaction after it (a commit of its own cost each ~90 µs of CPU on
   * this project's VMs, more than a send's whole API path); each resolves once that commits, and all
   * of them reject if it fails.
   */
  handOver(delivery: HandedDelivery, decide: DeliveryDecision, stillHeld?: () => boolean): Promise<DeliveryResult> {
    return new Promise((resolve, reject) => {
      if (this.handings.length === 0) setImmediate(() => this.handOverNow());
      this.handings.push({ delivery, decide, stillHeld, resolve, reject });
    });
  }

  private handOverNow(): void {
    const handings = this.handings;
    this.handings = [];
    try {
      const results = this.handOverAll(handings);
      for (let i = 0; i < handings.length; i++) {
        const result = results[i];
        if (result !== undefined) handings[i]!.resolve(result);
        else handings[i]!.reject(new DeliveryWithdrawnError(`The delivery of ${handings[i]!.delivery.messageId} was withdrawn before it was handed over`));
      }
    } catch (error) {
      for (const handing of handings) handing.reject(error);
    }
  }

  /**
   * Makes the next `times` deliveries to this contact fail (times < 0: until cleared), as a
   * messenger that cannot be reached does (transient: retried) or, with `permanent`, as one that
   * refuses the contact (not retried).
   */
  failNext(messenger: Messenger, contactId: string, times: number, reason: string, permanent = false): void {
    if (times === 0) {
      this.statement('DELETE FROM failures WHERE messenger = ? AND contact_id = ?').run(messenger, contactId);
      return;
    }
    this.statement(
      'INSERT INTO failures (messenger, contact_id, remaining, reason, permanent) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET remaining = excluded.remaining, reason = excluded.reason, permanent = excluded.permanent',
    ).run(messenger, contactId, times, reason, permanent ? 1 : 0);
  }

  consumeFailure(messenger: Messenger, contactId: string): InjectedFailure | undefined {
    return this.takeFailure(messenger, contactId);
  }

  attemptsOf(messageId: string): number {
    return (this.countAttempts.get(messageId) as { n: number }).n;
  }

  record(delivery: SimulatedDelivery): void {
    this.recordIn(delivery, delivery.attempt, delivery.ok, delivery.reason, delivery.at);
  }

  private recordIn(delivery: HandedDelivery, attempt: number, ok: boolean, reason: string | null, at: number): void {
    const { messageId, messenger, from, contactId, text, groupId } = delivery;
    this.insertDelivery.run(messageId, messenger, from, contactId, text, groupId, attempt, ok ? 1 : 0, reason, at);
    // Pruned in steps of a tenth, not at every record: the table stays between `keeps` and 1.1 × `keeps`.
    if (++this.recordedSincePrune >= Math.max(1, Math.floor(this.keeps / 10))) {
      this.recordedSincePrune = 0;
      this.pruneOld.run(this.keeps);
    }
  }

  deliveries(filter: { messageId?: string; contactId?: string } = {}): SimulatedDelivery[] {
    const rows = this.db
      .prepare(
        `SELECT message_id AS messageId, messenger, from_address AS "from", contact_id AS contactId, text, group_id AS groupId,
                attempt, ok, reason, at FROM deliveries
         WHERE (@messageId IS NULL OR message_id = @messageId) AND (@contactId IS NULL OR contact_id = @contactId) ORDER BY seq`,
      )
      .all({ messageId: filter.messageId ?? null, contactId: filter.contactId ?? null }) as Array<Omit<SimulatedDelivery, "ok"> & { ok: number }>;
    return rows.map((row) => ({ ...row, ok: row.ok === 1 }));
  }

  createGroup(messenger: Messenger, groupId: string, owner: string, name: string): void {
    this.statement('INSERT INTO groups (messenger, group_id, owner, name) VALUES (?, ?, ?, ?)').run(messenger, groupId, owner, name);
  }

  group(messenger: Messenger, groupId: string): SimulatedGroup | undefined {
    return this.statement('SELECT group_id AS groupId, owner, name, invite_link AS inviteLink FROM groups WHERE messenger = ? AND group_id = ?')
      .get(messenger, groupId) as SimulatedGroup | undefined;
  }

  groupsOwnedBy(messenger: Messenger, owner: string): SimulatedGroup[] {
    return this.statement('SELECT group_id AS groupId, owner, name, invite_link AS inviteLink FROM groups WHERE messenger = ? AND owner = ? ORDER BY rowid')
      .all(messenger, owner) as SimulatedGroup[];
  }

  setInviteLink(messenger: Messenger, groupId: string, link: string): void {
    this.statement('UPDATE groups SET invite_link = ? WHERE messenger = ? AND group_id = ?').run(link, messenger, groupId);
  }

  /** Adds the member, or changes its role; returns whether it was a member before. */
  putMember(messenger: Messenger, groupId: string, contactId: string, role: string): boolean {
    const before = this.memberRole(messenger, groupId, contactId);
    this.statement('INSERT INTO group_members (messenger, group_id, contact_id, role) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET role = excluded.role')
      .run(messenger, groupId, contactId, role);
    return before !== undefined;
  }

  memberRole(messenger: Messenger, groupId: string, contactId: string): string | undefined {
    const row = this.statement('SELECT role FROM group_members WHERE messenger = ? AND group_id = ? AND contact_id = ?').get(messenger, groupId, contactId) as
      | { role: string }
      | undefined;
    return row?.role;
  }

  removeMember(messenger: Messenger, groupId: string, contactId: string): boolean {
    return this.statement('DELETE FROM group_members WHERE messenger = ? AND group_id = ? AND contact_id = ?').run(messenger, groupId, contactId).changes > 0;
  }

  groupMembers(messenger: Messenger, groupId: string): Array<{ contactId: string; role: string }> {
    return this.statement('SELECT contact_id AS contactId, role FROM group_members WHERE messenger = ? AND group_id = ? ORDER BY contact_id')
      .all(messenger, groupId) as Array<{ contactId: string; role: string }>;
  }

  /** A statement prepared once per text: the group sync asks for members many times a second at scale. */
  private statement(source: string): Database.Statement {
    let prepared = this.statements.get(source);
    if (!prepared) this.statements.set(source, (prepared = this.db.prepare(source)));
    return prepared;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
