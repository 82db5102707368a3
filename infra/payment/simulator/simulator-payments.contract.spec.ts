import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { paymentProcessorContract } from '../../../test/contracts/payment-processor.contract.ts';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { PaymentSimulatorStore } from './payment-simulator-store.ts';
import { simulateBlocks, simulateConfirmations, simulateOutage, simulatePayment, simulateReorg } from './simulate-payments.ts';
import { SimulatorPaymentProcessor } from './simulator-payment-processor.ts';

const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'relay-payment-simulator-'));

paymentProcessorContract('simulator', async () => {
  const dir = dataDir();
  const processor = new SimulatorPaymentProcessor({ dataDir: dir });
  const downDir = dataDir();
  return {
    processor,
    amount: 1_500_000_000_000n,
    visibleWithinMs: 1000,
    // As the CLI will: through the simulator's file, not through the processor.
    pay: async (address, amount) => simulatePayment(dir, { to: { address }, amount }).txid,
    mine: async (blocks) => void simulateBlocks(dir, blocks),
    reorg: async (depth) => void simulateReorg(dir, depth),
    reopen: async () => new SimulatorPaymentProcessor({ dataDir: dir }),
    unreachable: async () => {
      simulateOutage(downDir, 'contract test outage');
      return new SimulatorPaymentProcessor({ dataDir: downDir });
    },
    teardown: async () => {
      await processor.close();
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(downDir, { recursive: true, force: true });
    },
  };
});

describe('payment simulator: what the CLI does to it', () => {
  const dirs: string[] = [];
  const processors: SimulatorPaymentProcessor[] = [];
  const open = () => {
    const dir = dataDir();
    dirs.push(dir);
    const processor = new SimulatorPaymentProcessor({ dataDir: dir });
    processors.push(processor);
    return { dir, processor };
  };
  afterEach(async () => {
    for (const processor of processors.splice(0)) await processor.close();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('pays with N confirmations at once, by address or by index, and sets a payment’s confirmations (a reorganisation of one payment)', async () => {
    const { dir, processor } = open();
    const to = await processor.createAddress({ invoiceId: 'inv_1', amount: 5n, description: 'x' });
    const paid = simulatePayment(dir, { to: { addressIndex: to.addressIndex }, amount: 5n, confirmations: 4 });
    expect(paid).toMatchObject({ confirmations: 4, inPool: false, paymentId: `${paid.txid}:0` });
    expect(await processor.listPayments([to.addressIndex])).toEqual([paid]);
    expect(simulateConfirmations(dir, paid.txid, 1)).toMatchObject({ confirmations: 1, inPool: false });
    expect(simulateConfirmations(dir, paid.txid, 0)).toMatchObject({ confirmations: 0, inPool: true, height: null });
    expect((await processor.listPayments([to.addressIndex]))[0]).toMatchObject({ confirmations: 0, inPool: true });
  });

  it('keeps amounts past 2^53 exact', async () => {
    const { dir, processor } = open();
    const amount = 18_446_744_073_709_551_615n;
    const to = await processor.createAddress({ invoiceId: 'inv_big', amount, description: '' });
    expect(to.paymentUri).toContain(`amount=${amount}`);
    simulatePayment(dir, { to: { address: to.address }, amount });
    expect((await processor.listPayments([to.addressIndex]))[0]!.amount).toBe(amount);
  });

  it('keeps its chain, addresses and payments across a restart, and hands out no index twice', async () => {
    const { dir, processor } = open();
    const first = await processor.createAddress({ invoiceId: 'inv_1', amount: 5n, description: '' });
    simulatePayment(dir, { to: { address: first.address }, amount: 5n, confirmations: 2 });
    const before = await processor.listPayments([first.addressIndex]);
    await processor.close();
    const restarted = new SimulatorPaymentProcessor({ dataDir: dir });
    processors.push(restarted);
    expect(await restarted.listPayments([first.addressIndex])).toEqual(before);
    const second = await restarted.createAddress({ invoiceId: 'inv_2', amount: 5n, description: '' });
    expect(second.addressIndex).toBe(first.addressIndex + 1);
  });

  it('fakes an outage until told otherwise', async () => {
    const { dir, processor } = open();
    simulateOutage(dir, 'wallet restarting');
    await expect(processor.listPayments([1])).rejects.toThrow(new PaymentProcessorUnavailableError('The payment simulator is down: wallet restarting'));
    expect(await processor.checkHealth()).toEqual({ reachable: false, reason: 'The payment simulator is down: wallet restarting' });
    simulateOutage(dir, null);
    expect(await processor.listPayments([1])).toEqual([]);
  });

  it('refuses what a chain cannot do', async () => {
    const { dir, processor } = open();
    const to = await processor.createAddress({ invoiceId: 'inv_1', amount: 5n, description: '' });
    expect(() => simulatePayment(dir, { to: { address: 'nowhere' }, amount: 5n })).toThrow(RangeError);
    expect(() => simulatePayment(dir, { to: { address: to.address }, amount: 0n })).toThrow(RangeError);
    expect(() => simulatePayment(dir, { to: { address: to.address }, amount: 5n, confirmations: -1 })).toThrow(RangeError);
    expect(() => simulateConfirmations(dir, 'f'.repeat(64), 1)).toThrow(RangeError);
    expect(() => simulateBlocks(dir, 0)).toThrow(RangeError);
    await expect(processor.listPayments([-1])).rejects.toThrow(RangeError);
    const store = new PaymentSimulatorStore(dir);
    try {
      expect(() => store.popBlocks(store.tip())).toThrow(RangeError);
    } finally {
      store.close();
    }
  });

  it('reports a payment marked double-spent', async () => {
    const { dir, processor } = open();
    const to = await processor.createAddress({ invoiceId: 'inv_1', amount: 5n, description: '' });
    simulatePayment(dir, { to: { address: to.address }, amount: 5n, doubleSpend: true });
    expect((await processor.listPayments([to.addressIndex]))[0]).toMatchObject({ doubleSpendSeen: true, inPool: true });
  });
});
