import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

/**
 * How the pipeline's thread is scheduled beside the API thread (role `all`, `PIPELINE_THREAD_NICE`):
 * `idle`, Linux's SCHED_IDLE policy (the thread runs when a core has nothing else to run), or a
 * nice value from 0 to 19 (0 leaves the thread as it is).
 */
export type ThreadPriority = 'idle' | number;

/** What the thread runs at afterwards: SCHED_IDLE, a nice value, or undefined when it was left as it was. */
export type AppliedPriority = 'idle' | number | undefined;

/** The nice value a thread gets when SCHED_IDLE cannot be set: the lowest priority a nice value gives. */
export const IDLE_FALLBACK_NICE = 19;

/** `SCHED_IDLE` in Linux's `sched.h`, as `/proc/<pid>/task/<tid>/stat` shows a thread's policy. */
const SCHED_IDLE = 5;

/** The calling thread's id (on Linux `/proc/thread-self` is `<pid>/task/<tid>`). */
const thisThreadId = (): string => fs.readlinkSync('/proc/thread-self').split('/').pop()!;

/** The calling thread's scheduling policy: field 41 of its stat line. */
const thisThreadPolicy = (): number => {
  const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
};

/** `setpriority(PRIO_PROCESS, 0, …)`, which on Linux acts on the calling thread only. */
const niceThisThread = (nice: number): AppliedPriority => {
  try {
    os.setPriority(nice);
    return nice;
  } catch {
    return undefined; // a sandbox that forbids it: the thread keeps the process's priority
  }
};

/**
 * Node has no call for a thread's scheduling policy: util-linux's `chrt` sets it (lowering a
 * thread to SCHED_IDLE needs no privilege), and the thread's stat line says whether it took.
 */
const idleThisThread = (chrt: string): boolean => {
  try {
    execFileSync(chrt, ['--idle', '--pid', '0', thisThreadId()], { stdio: 'ignore', timeout: 5000 });
    return thisThreadPolicy() === SCHED_IDLE;
  } catch {
    return false;
  }
};

/**
 * Gives the calling thread a lower priority, where that is per thread: on Linux. Elsewhere it
 * would lower the whole process, the API thread with it, so nothing is done. `idle` falls back to
 * nice 19 where `chrt` is missing or refused. Returns what the thread runs at.
 *
 * Role `all` runs its pipeline in a worker thread beside the API thread. On a machine with fewer
 * free cores than busy threads, the pipeline that yields leaves the API thread the core it needs
 * to accept messages (durably), while deliveries use what is left and catch up once the load lets
 * up; with cores to spare it changes nothing. Measured on 2 cores (docs/performance.md, session
 * 23), sends of one against nice 5: nice 19 (the default) +11 %, SCHED_IDLE +17 %; but under
 * SCHED_IDLE a backlog drained 9 % slower (likely because a core that runs only an idle-policy
 * thread counts as free for every thread that wakes, V8's helpers included: not traced), and while
 * other work keeps every core busy, deliveries wait for it.
 */
export const lowerThisThreadPriority = (priority: ThreadPriority, options: { chrt?: string } = {}): AppliedPriority => {
  if (priority !== 'idle' && (!Number.isSafeInteger(priority) || priority < 0 || priority > 19)) {
    throw new RangeError(`nice must be an integer from 0 to 19, got ${priority}`);
  }
  if (priority === 0 || process.platform !== 'linux') return undefined;
  if (priority !== 'idle') return niceThisThread(priority);
  return idleThisThread(options.chrt ?? 'chrt') ? 'idle' : niceThisThread(IDLE_FALLBACK_NICE);
};
