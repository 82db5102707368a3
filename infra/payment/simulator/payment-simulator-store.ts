/**
 * What the payment simulator remembers, in `payment-simulator.db` of DATA_DIR (like the messenger
 * simulator's `simulator.db`), so that the CLI and a running server see the same chain, and a
 * restart loses nothing: the addresses it handed out, the payments made to them, a pretend
 * chain's height (payments are in a block at a height, or in the pool), and an outage it was told
 * to fake.
 *
 * Confirmations are the chain's: a payment mined at height h has `tip - h + 1`. Mining puts the
 * pool into the next block; popping blocks puts their payments back in the pool; a payment's
 * confirmations can also be set directly (its block moves), which is how the CLI fakes a
 * reorganisation of one payment.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openSqlite } from '../../sqlite/open-sqlite.ts';

export const PAYMENT_SIMULATOR_FILE = 'payment-simulator.db';

/** The pretend chain starts this high, so that a payment can be given many confirmations at once. */
export const SIMULATED_START_HEIGHT = 1_000_000;

const SCHEMA_VERSION = 1;
const schemaSql = `
  CREATE TABLE IF NOT EXISTS chain (id INTEGER PRIMARY KEY CHECK (id = 1), tip INTEGER NOT NULL);
  INSERT OR IGNORE INTO chain (id, tip) VALUES (1, ${SIMULATED_START_HEIGHT});
  -- Index 0 is the wallet's main address: invoices get 1, 2, … as Monero subaddresses do.
  CREATE TABLE IF NOT EXISTS addresses (
    address_index INTEGER PRIMARY KEY CHECK (address_index >= 1),
    address       TEXT    NOT NULL UNIQUE,
    invoice_id    TEXT    NOT NULL,
    amount        TEXT    NOT NULL,
    created_at    INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS payments (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    txid          TEXT    NOT NULL UNIQUE,
    address_index INTEGER NOT NULL REFERENCES addresses (address_index),
    amount        TEXT    NOT NULL,
    -- NULL: in the pool.
    height        INTEGER,
    received_at   INTEGER NOT NULL,
    double_spend  INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX IF NOT EXISTS payments_address ON payments (address_index);
  CREATE TABLE IF NOT EXISTS outage (id INTEGER PRIMARY KEY CHECK (id = 1), reason TEXT NOT NULL);
  PRAGMA user_version = ${SCHEMA_VERSION};
`;

export interface SimulatedAddress {
  readonly addressIndex: number;
  readonly address: string;
  readonly invoiceId: string;
  readonly amount: bigint;
}

export interface SimulatedPayment {
  readonly txid: string;
  readonly addressIndex: number;
  readonly amount: bigint;
  readonly height: number | null;
  readonly confirmations: number;
  readonly receivedAt: Date;
  readonly doubleSpend: boolean;
}

interface PaymentRow {
  txid: string;
  address_index: bigint;
  amount: string;
  height: bigint | null;
  received_at: bigint;
  double_spend: bigint;
}

export class PaymentSimulatorStore {
  private readonly db: Database.Database;

  constructor(dataDir: string) {
    this.db = openSqlite({ path: path.join(dataDir, PAYMENT_SIMULATOR_FILE), synchronous: 'normal', schemaSql, schemaVersion: SCHEMA_VERSION });
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  tip(): number {
    return Number((this.db.prepare('SELECT tip FROM chain WHERE id = 1').get() as { tip: bigint }).tip);
  }

  createAddress(invoiceId: string, amount: bigint, now = new Date()): SimulatedAddress {
    return this.db
      .transaction((): SimulatedAddress => {
        const last = this.db.prepare('SELECT max(address_index) AS n FROM addresses').get() as { n: bigint | null };
        const addressIndex = Number(last.n ?? 0n) + 1;
        const address = `relaysim1${randomBytes(20).toString('hex')}`;
        this.db
          .prepare('INSERT INTO addresses (address_index, address, invoice_id, amount, created_at) VALUES (?, ?, ?, ?, ?)')
          .run(addressIndex, address, invoiceId, amount.toString(), now.getTime());
        return { addressIndex, address, invoiceId, amount };
      })
      .immediate();
  }

  address(ref: { readonly address: string } | { readonly addressIndex: number }): SimulatedAddress | undefined {
    const row = (
      'address' in ref
        ? this.db.prepare('SELECT * FROM addresses WHERE address = ?').get(ref.address)
        : this.db.prepare('SELECT * FROM addresses WHERE address_index = ?').get(ref.addressIndex)
    ) as { address_index: bigint; address: string; invoice_id: string; amount: string } | undefined;
    return row && { addressIndex: Number(row.address_index), address: row.address, invoiceId: row.invoice_id, amount: BigInt(row.amount) };
  }

  /** A payment to a known address, in the pool (0 confirmations) or already `confirmations` deep. */
  pay(addressIndex: number, amount: bigint, options: { readonly confirmations?: number; readonly doubleSpend?: boolean; readonly now?: Date } = {}): SimulatedPayment {
    if (amount <= 0n) throw new RangeError('A payment amount must be more than zero');
    const confirmations = options.confirmations ?? 0;
    return this.db
      .transaction((): SimulatedPayment => {
        if (!this.address({ addressIndex })) throw new RangeError(`No simulated address has index ${addressIndex}`);
        const txid = randomBytes(32).toString('hex');
        const height = this.heightFor(confirmations);
        this.db
          .prepare('INSERT INTO payments (txid, address_index, amount, height, received_at, double_spend) VALUES (?, ?, ?, ?, ?, ?)')
          .run(txid, addressIndex, amount.toString(), height, (options.now ?? new Date()).getTime(), options.doubleSpend ? 1 : 0);
        return this.payment(txid)!;
      })
      .immediate();
  }

  /** Moves a payment's block so that it has `confirmations` (0: back in the pool). */
  setConfirmations(txid: string, confirmations: number): SimulatedPayment {
    return this.db
      .transaction((): SimulatedPayment => {
        if (!this.payment(txid)) throw new RangeError(`No simulated payment has transaction id ${txid}`);
        this.db.prepare('UPDATE payments SET height = ? WHERE txid = ?').run(this.heightFor(confirmations), txid);
        return this.payment(txid)!;
      })
      .immediate();
  }

  /** `blocks` new blocks; the pool goes into the first. Returns the new tip. */
  mine(blocks: number): number {
    if (!Number.isSafeInteger(blocks) || blocks < 1) throw new RangeError('Mine at least one block');
    return this.db
      .transaction((): number => {
        const tip = this.tip();
        this.db.prepare('UPDATE payments SET height = ? WHERE height IS NULL').run(tip + 1);
        this.db.prepare('UPDATE chain SET tip = ? WHERE id = 1').run(tip + blocks);
        return tip + blocks;
      })
      .immediate();
  }

  /** Takes the last `blocks` blocks off the chain; their payments go back to the pool. Returns the new tip. */
  popBlocks(blocks: number): number {
    if (!Number.isSafeInteger(blocks) || blocks < 1) throw new RangeError('Pop at least one block');
    return this.db
      .transaction((): number => {
        const tip = this.tip() - blocks;
        if (tip < 1) throw new RangeError('Cannot pop the whole chain');
        this.db.prepare('UPDATE payments SET height = NULL WHERE height > ?').run(tip);
        this.db.prepare('UPDATE chain SET tip = ? WHERE id = 1').run(tip);
        return tip;
      })
      .immediate();
  }

  payment(txid: string): SimulatedPayment | undefined {
    const row = this.db.prepare('SELECT * FROM payments WHERE txid = ?').get(txid) as PaymentRow | undefined;
    return row && this.toPayment(row, this.tip());
  }

  /** The payments to these addresses, in the order they were made. */
  payments(addressIndices: readonly number[]): SimulatedPayment[] {
    if (addressIndices.length === 0) return [];
    const tip = this.tip();
    const rows = this.db
      .prepare(`SELECT * FROM payments WHERE address_index IN (SELECT value FROM json_each(?)) ORDER BY seq`)
      .all(JSON.stringify([...new Set(addressIndices)])) as PaymentRow[];
    return rows.map((row) => this.toPayment(row, tip));
  }

  /** Fakes a processor that cannot be reached (a reason), or ends that (null). */
  setOutage(reason: string | null): void {
    if (reason === null) this.db.prepare('DELETE FROM outage').run();
    else this.db.prepare('INSERT INTO outage (id, reason) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET reason = excluded.reason').run(reason);
  }

  outage(): string | undefined {
    return (this.db.prepare('SELECT reason FROM outage WHERE id = 1').get() as { reason: string } | undefined)?.reason;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private heightFor(confirmations: number): number | null {
    const tip = this.tip();
    if (!Number.isSafeInteger(confirmations) || confirmations < 0 || confirmations > tip) throw new RangeError(`Confirmations must be a whole number from 0 to ${tip}`);
    return confirmations === 0 ? null : tip - confirmations + 1;
  }

  private toPayment(row: PaymentRow, tip: number): SimulatedPayment {
    const height = row.height === null ? null : Number(row.height);
    return {
      txid: row.txid,
      addressIndex: Number(row.address_index),
      amount: BigInt(row.amount),
      height,
      confirmations: height === null ? 0 : Math.max(0, tip - height + 1),
      receivedAt: new Date(Number(row.received_at)),
      doubleSpend: row.double_spend === 1n,
    };
  }
}
