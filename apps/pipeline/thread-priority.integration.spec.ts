import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { IDLE_FALLBACK_NICE, lowerThisThreadPriority, type ThreadPriority } from './thread-priority.ts';

/** A thread's nice value and scheduling policy, from /proc (fields 19 and 41 of its stat line). */
const schedulingOf = (tid: string): { nice: number; policy: number } => {
  const fields = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ').pop()!.split(' ');
  return { nice: Number(fields[16]), policy: Number(fields[38]) };
};
const thisThread = () => fs.readlinkSync('/proc/thread-self').split('/').pop()!;
const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/** Calls lowerThisThreadPriority in a worker thread; what it returned, and the worker's scheduling while it still runs. */
const inWorker = async (priority: ThreadPriority, options: { chrt?: string } = {}) => {
  // The worker imports the module by file URL and reports its thread id and what the call said.
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(new URL('./thread-priority.ts', import.meta.url).href)}); })
      .then(({ lowerThisThreadPriority }) => {
        const applied = lowerThisThreadPriority(${JSON.stringify(priority)}, ${JSON.stringify(options)});
        const tid = require('node:fs').readlinkSync('/proc/thread-self').split('/').pop();
        require('node:worker_threads').parentPort.postMessage({ applied, tid });
        return new Promise((resolve) => require('node:worker_threads').parentPort.once('message', resolve));
      })`,
    { eval: true },
  );
  const { applied, tid } = await new Promise<{ applied: unknown; tid: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const scheduling = schedulingOf(tid);
  worker.postMessage('done');
  await worker.terminate();
  return { applied, scheduling };
};

describe.runIf(process.platform === 'linux')('lowerThisThreadPriority', () => {
  it('lowers the calling worker thread to a nice value, not the thread that started it', async () => {
    const before = schedulingOf(thisThread());
    const { applied, scheduling } = await inWorker(7);
    expect(applied).toBe(7);
    expect(scheduling).toEqual({ nice: 7, policy: SCHED_OTHER });
    expect(schedulingOf(thisThread())).toEqual(before);
  });

  it('puts the calling worker thread under SCHED_IDLE with chrt, not the thread that started it', async () => {
    const before = schedulingOf(thisThread());
    const { applied, scheduling } = await inWorker('idle');
    expect(applied).toBe('idle');
    expect(scheduling.policy).toBe(SCHED_IDLE);
    expect(schedulingOf(thisThread())).toEqual(before);
  });

  it('falls back to the lowest nice value where chrt cannot be run', async () => {
    const { applied, scheduling } = await inWorker('idle', { chrt: '/nonexistent/chrt' });
    expect(applied).toBe(IDLE_FALLBACK_NICE);
    expect(scheduling).toEqual({ nice: IDLE_FALLBACK_NICE, policy: SCHED_OTHER });
  });

  it('leaves the thread as it is at 0 and refuses a value outside 0-19', () => {
    const before = schedulingOf(thisThread());
    expect(lowerThisThreadPriority(0)).toBeUndefined();
    expect(schedulingOf(thisThread())).toEqual(before);
    expect(() => lowerThisThreadPriority(20)).toThrow('nice must be an integer from 0 to 19, got 20');
    expect(() => lowerThisThreadPriority(-1)).toThrow(RangeError);
    expect(() => lowerThisThreadPriority(2.5)).toThrow(RangeError);
  });
});
