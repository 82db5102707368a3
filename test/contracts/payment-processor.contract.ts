/**
 * The contract every payment processor passes (the simulator, Monero through monero-wallet-rpc):
 * what the invoice watcher relies on. Payments are made, blocks mined and reorganisations caused
 * through the fixture, the way a customer and a chain would; the processor only reports them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import { PaymentProcessorUnavailableError, type ObservedPayment, type PaymentProcessor } from '../../infra/payment/port.ts';
import { eventually } from '../support/eventually.ts';

export interface PaymentFixture {
  readonly processor: PaymentProcessor;
  /** What a customer pays in these tests, in atomic units (three such payments must be affordable at once). */
  readonly amount: bigint;
  /** How long a payment, a block or a reorganisation may take to show in the processor's reads. */
  readonly visibleWithinMs: number;
  /** A customer pays `amount` to `address`; resolves with the transaction id once it is sent (in the pool). */
  pay(address: string, amount: bigint): Promise<string>;
  /** Mines `blocks` blocks (the pool goes into the first). */
  mine(blocks: number): Promise<void>;
  /**
   * A reorganisation: takes back the last `depth` blocks, then mines one new block. The contract
   * never takes back more blocks than were mined since its payment was made: a transaction can be
   * invalid below the height it was made at (Monero: a ring member's coinbase output locked again),
   * and then it would not go back into a block.
   */
  reorg(depth: number): Promise<void>;
  /** Another processor on the same backend, as a restarted Relay would open. */
  reopen(): Promise<PaymentProcessor>;
  /** A processor whose backend cannot be reached. */
  unreachable(): Promise<PaymentProcessor>;
  teardown(): Promise<void>;
}

export const paymentProcessorContract = (name: string, makeFixture: () => Promise<PaymentFixture>) => {
  describe(`PaymentProcessor contract: ${name}`, () => {
    let f: PaymentFixture;
    const opened: PaymentProcessor[] = [];
    let invoices = 0;
    const newAddress = (amount = f.amount) => {
      const invoiceId = `contract-${Date.now().toString(36)}-${++invoices}`;
      return f.processor.createAddress({ invoiceId, amount, description: `Relay invoice ${invoiceId}` });
    };
    /** Reads until `check` passes on the payments of `indices`; returns them. */
    const paymentsWhen = async (indices: number[], check: (payments: ObservedPayment[]) => void, processor = f.processor) => {
      let payments: ObservedPayment[] = [];
      await eventually(async () => {
        payments = await processor.listPayments(indices);
        check(payments);
      }, f.visibleWithinMs);
      return payments;
    };

    beforeEach(async () => {
      f = await makeFixture();
    });
    afterEach(async () => {
      for (const processor of opened.splice(0)) await processor.close();
      await f.teardown();
    });

    it('gives each invoice an address of its own, with a payment URI, and no payments yet', async () => {
      const a = await newAddress();
      const b = await newAddress();
      expect(a.address).not.toBe(b.address);
      expect(a.addressIndex).not.toBe(b.addressIndex);
      // Index 0 is the wallet's main address, never an invoice's.
      expect(a.addressIndex).toBeGreaterThan(0);
      expect(a.paymentUri).toContain(a.address);
      expect(await f.processor.listPayments([a.addressIndex, b.addressIndex])).toEqual([]);
      expect(await f.processor.listPayments([])).toEqual([]);
      expect(typeof f.processor.asset).toBe('string');
      expect(await f.processor.checkHealth()).toMatchObject({ reachable: true });
    });

    it('sees a payment in the pool at once, then its confirmations rise as blocks are mined', async () => {
      const to = await newAddress();
      const txid = await f.pay(to.address, f.amount);
      const [inPool] = await paymentsWhen([to.addressIndex], (p) => expect(p).toHaveLength(1));
      expect(inPool).toMatchObject({ txid, addressIndex: to.addressIndex, amount: f.amount, confirmations: 0, inPool: true, height: null });
      expect(typeof inPool!.amount).toBe('bigint');
      expect(inPool!.receivedAt.getTime()).toBeGreaterThan(Date.now() - 10 * 60_000);

      await f.mine(1);
      const [mined] = await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ confirmations: 1, inPool: false }));
      expect(mined!.paymentId).toBe(inPool!.paymentId);
      expect(mined!.height).toEqual(expect.any(Number));

      await f.mine(2);
      const [deeper] = await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ confirmations: 3 }));
      expect(deeper).toMatchObject({ paymentId: inPool!.paymentId, height: mined!.height, amount: f.amount });
    });

    it('lists two payments to one address as two entries, and only the payments of the addresses asked for', async () => {
      const a = await newAddress();
      const b = await newAddress();
      const second = f.amount / 2n;
      const first = await f.pay(a.address, f.amount);
      const other = await f.pay(b.address, f.amount);
      const again = await f.pay(a.address, second);
      const toA = await paymentsWhen([a.addressIndex], (p) => expect(p).toHaveLength(2));
      expect(new Set(toA.map((p) => p.paymentId)).size).toBe(2);
      expect(toA.map((p) => [p.txid, p.amount]).sort()).toEqual(
        [
          [first, f.amount],
          [again, second],
        ].sort(),
      );
      expect((await f.processor.listPayments([b.addressIndex])).map((p) => p.txid)).toEqual([other]);
      expect(await f.processor.listPayments([a.addressIndex, b.addressIndex])).toHaveLength(3);
    });

    it('reports a payment under the same id at every read and after a restart, so that it is never counted twice', async () => {
      const to = await newAddress();
      await f.pay(to.address, f.amount);
      await f.mine(1);
      const first = await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ confirmations: 1 }));
      expect(await f.processor.listPayments([to.addressIndex])).toEqual(first);
      const restarted = await f.reopen();
      opened.push(restarted);
      expect(await restarted.listPayments([to.addressIndex])).toEqual(first);
    });

    it('reports fewer confirmations after a reorganisation, also one that took the payment back to the pool', async () => {
      const to = await newAddress();
      await f.pay(to.address, f.amount);
      await f.mine(3);
      const [before] = await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ confirmations: 3 }));
      // Two blocks taken back, one new: the payment's block stays, two confirmations.
      await f.reorg(2);
      await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ paymentId: before!.paymentId, confirmations: 2, inPool: false }));
      // Two more taken back: its block too (not deeper than the chain was when it was paid, where
      // it is valid again); it goes back to the pool and into the new block.
      await f.reorg(2);
      const [after] = await paymentsWhen([to.addressIndex], (p) => expect(p[0]).toMatchObject({ paymentId: before!.paymentId, confirmations: 1, inPool: false }));
      expect(after).toMatchObject({ txid: before!.txid, amount: f.amount });
    });

    it('fails with PaymentProcessorUnavailableError when the processor cannot be reached', async () => {
      const down = await f.unreachable();
      opened.push(down);
      const fails = async (operation: Promise<unknown>) => {
        const error = await operation.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(PaymentProcessorUnavailableError);
        expect(isUnavailable(error)).toBe(true);
      };
      await fails(down.createAddress({ invoiceId: 'down', amount: f.amount, description: 'down' }));
      await fails(down.listPayments([1]));
      expect(await down.checkHealth()).toMatchObject({ reachable: false, reason: expect.any(String) });
    });

    it('fails with PaymentProcessorUnavailableError once closed', async () => {
      const processor = await f.reopen();
      await processor.close();
      await expect(processor.listPayments([1])).rejects.toBeInstanceOf(PaymentProcessorUnavailableError);
      await expect(processor.createAddress({ invoiceId: 'closed', amount: f.amount, description: '' })).rejects.toBeInstanceOf(PaymentProcessorUnavailableError);
    });
  });
};
