import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { lowerThisThreadPriority } from './thread-priority.ts';

/** A thread's nice value, from /proc (field 19 of its stat line). */
const niceOf = (tid: string): number => {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
};
const thisThread = () => fs.readlinkSync('/proc/thread-self').split('/').pop()!;

describe('lowerThisThreadPriority', () => {
  it.runIf(process.platform === 'linux')('lowers the calling worker thread only, not the thread that started it', async () => {
    const before = niceOf(thisThread());
    // The worker imports the module by file URL and reports its thread id and what the call said.
    const worker = new Worker(
      `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(new URL('./thread-priority.ts', import.meta.url).href)}); })
        .then(({ lowerThisThreadPriority }) => {
          const set = lowerThisThreadPriority(7);
          const tid = require('node:fs').readlinkSync('/proc/thread-self').split('/').pop();
          require('node:worker_threads').parentPort.postMessage({ set, tid });
          return new Promise((resolve) => require('node:worker_threads').parentPort.once('message', resolve));
        })`,
      { eval: true },
    );
    const { set, tid } = await new Promise<{ set: boolean; tid: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      expect(set).toBe(true);
      expect(niceOf(tid)).toBe(7);
      expect(niceOf(thisThread())).toBe(before);
    } finally {
      worker.postMessage('done');
      await worker.terminate();
    }
  });

  it('leaves the thread as it is at 0 and refuses a value outside 0-19', () => {
    const before = niceOf(thisThread());
    expect(lowerThisThreadPriority(0)).toBe(false);
    expect(niceOf(thisThread())).toBe(before);
    expect(() => lowerThisThreadPriority(20)).toThrow('nice must be an integer from 0 to 19, got 20');
    expect(() => lowerThisThreadPriority(-1)).toThrow(RangeError);
  });
});
