import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryChecker } from '../support/history-checker.ts';
import { readOutboxes, report, startCluster, startTraffic, untilDelivered, warningsOf, type Cluster } from '../support/fault-cluster.ts';
import { waitFor } from '../support/wait-for.ts';

const run = promisify(execFile);

/**
 * Disk full on the embedded default (issue 48): one Relay of role `all` with its DATA_DIR (events,
 * broker log, simulator, snapshots) on a tmpfs of this test's own (SIZE_MB), traffic both ways;
 * the rest of the filesystem is filled with a file until the kernel says ENOSPC, kept full for
 * FULL_MS, then the file is removed. Sends answer the interface's 503 while it is full, Relay does
 * not stop, nothing acknowledged (a 202, an injection that succeeded) is lost, and it serves again
 * by itself once there is room.
 *
 * The simulator, the messenger of this test, records its hand-offs in the same DATA_DIR: while the
 * disk is full its hand-offs fail too (as a messenger that is away), so the delivery policy here
 * allows attempts enough that none is given up during the fault.
 */
const SIZE_MB = 64;
const FULL_MS = Number(process.env.FAULT_FULL_MS ?? 10_000);
/** docs/durability.md, "Faults": from room again to sends accepted again. */
const RECOVERY_BOUND_MS = 10_000;
const ANSWER_WITHIN_MS = 20_000;

let mountPoint: string | undefined;
let mounted = false;
let cluster: Cluster | undefined;
let filler: string | undefined;

const canMount = process.platform === 'linux' && process.getuid?.() === 0;

beforeAll(async () => {
  if (!canMount) return;
  mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-disk-full-'));
  await run('mount', ['-t', 'tmpfs', '-o', `size=${SIZE_MB}m,mode=0700`, 'tmpfs', mountPoint]);
  mounted = true;
}, 60_000);
afterAll(async () => {
  if (filler) fs.rmSync(filler, { force: true });
  await cluster?.close();
  if (mounted) await run('umount', [mountPoint!]).catch(() => run('umount', ['-l', mountPoint!]));
  if (mountPoint) fs.rmSync(mountPoint, { recursive: true, force: true });
}, 120_000);

/** Writes `file` until the filesystem is full (ENOSPC); returns the bytes written. */
const fill = (file: string): number => {
  const chunk = Buffer.alloc(256 * 1024, 0x5a);
  const fd = fs.openSync(file, 'w');
  let written = 0;
  try {
    for (;;) {
      try {
        written += fs.writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw error;
      }
    }
    // What is left is smaller than a chunk: take it too, a page at a time.
    const page = Buffer.alloc(4096, 0x5a);
    for (;;) {
      try {
        written += fs.writeSync(fd, page);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw error;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return written;
};

describe.skipIf(!canMount)('disk full on the embedded default', () => {
  it(`answers 503 while DATA_DIR's filesystem is full (${FULL_MS / 1000} s), loses nothing acknowledged, and serves again by itself`, async () => {
    const dataDir = path.join(mountPoint!, 'data');
    cluster = await startCluster({
      count: 1,
      env: { EVENT_STORE: 'sqlite', BROKER: 'embedded', DELIVERY_MAX_ATTEMPTS: '30', DELIVERY_BACKOFF_BASE_MS: '500', DELIVERY_BACKOFF_FACTOR: '1.2' },
      dataDirOf: () => dataDir,
    });
    const c = cluster;
    const checker = new HistoryChecker();
    const traffic = startTraffic(c, checker, { inboundPerChunk: 4, inboundEveryMs: 500, sendBatch: 4, sendEveryMs: 100, requestTimeoutMs: ANSWER_WITHIN_MS });
    await waitFor(() => {
      readOutboxes(c, checker);
      return checker.verdict().counts.outbound.delivered >= 40;
    }, 60_000, 'deliveries before the disk is full', 200);

    filler = path.join(mountPoint!, 'filler');
    const fullAt = Date.now();
    const filled = fill(filler);
    const first503 = await waitFor(() => traffic.answers.find((a) => a.at > fullAt && a.kind === 'send' && a.status === 503), 60_000, 'a 503 on send while the disk is full', 50);
    // Kept full (topped up: Relay may have freed a little), then room again.
    await new Promise((resolve) => setTimeout(resolve, FULL_MS));
    fill(`${filler}-2`);
    const refusedBefore = checker.verdict().counts.outbound.refused;
    fs.rmSync(filler, { force: true });
    fs.rmSync(`${filler}-2`, { force: true });
    const roomAt = Date.now();
    const sendBackMs = (await waitFor(() => traffic.answers.find((a) => a.at > roomAt && a.kind === 'send' && a.status === 202), RECOVERY_BOUND_MS + 30_000, 'a 202 on send after room came back', 50)).at - roomAt;
    const deliveredAtRoom = checker.verdict().counts.outbound.delivered;
    const deliveryBackMs = (await waitFor(() => {
      readOutboxes(c, checker);
      return checker.verdict().counts.outbound.delivered > deliveredAtRoom ? Date.now() : undefined;
    }, RECOVERY_BOUND_MS + 30_000, 'a delivery after room came back', 100)) - roomAt;

    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await traffic.stop();
    await traffic.drain(90_000);
    await untilDelivered(c, checker, 120_000).catch((error) => {
      throw new Error(`${String(error)}\n${warningsOf(c.instances[0]!, 40)}`);
    });
    readOutboxes(c, checker);
    const during = traffic.answers.filter((a) => a.at > first503.at && a.at < roomAt);
    report('disk full', checker, {
      filledMb: Math.round(filled / 1e6),
      first503AfterMs: first503.at - fullAt,
      fullMs: roomAt - fullAt,
      refusedWhileFull: refusedBefore,
      sendBackMs,
      deliveryBackMs,
      answersWhileFull: during.reduce<Record<string, number>>((acc, a) => ((acc[`${a.kind} ${a.status}`] = (acc[`${a.kind} ${a.status}`] ?? 0) + 1), acc), {}),
      statuses: traffic.statuses,
      bodies: traffic.bodies,
      injectFailures: traffic.injectFailures.slice(0, 2),
    });
    checker.assertClean('disk full');
    expect(c.instances[0]!.child.exitCode, warningsOf(c.instances[0]!)).toBe(null);
    // One of the interface's 503 answers of a send: the data keys' store or the append, whichever the send reached first.
    expect(['Failed to enqueue messages', 'Key store unavailable']).toContain((traffic.bodies['send 503'] as { error?: string } | undefined)?.error);
    expect(Object.keys(traffic.statuses).filter((k) => k.endsWith('no answer')), `requests not answered within ${ANSWER_WITHIN_MS} ms`).toEqual([]);
    expect(sendBackMs).toBeLessThan(RECOVERY_BOUND_MS);
  });
});
