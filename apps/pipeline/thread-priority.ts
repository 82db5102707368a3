import os from 'node:os';

/**
 * Gives the calling thread a lower priority (a nice value from 1 to 19; 0 leaves it as it is), where
 * that is per thread: on Linux, `setpriority(PRIO_PROCESS, 0, …)` acts on the calling thread only.
 * Elsewhere it would lower the whole process, the API thread with it, so nothing is done. Says
 * whether it was set (raising a nice value needs no privilege).
 *
 * Role `all` runs its pipeline in a worker thread beside the API thread. On a machine with fewer
 * free cores than busy threads, the pipeline at nice 5 leaves the API thread the core it needs to
 * accept messages (durably) while deliveries go on with the CPU left over; with cores to spare it
 * changes nothing (docs/performance.md, session 18).
 */
export const lowerThisThreadPriority = (nice: number): boolean => {
  if (!Number.isSafeInteger(nice) || nice < 0 || nice > 19) throw new RangeError(`nice must be an integer from 0 to 19, got ${nice}`);
  if (nice === 0 || process.platform !== 'linux') return false;
  try {
    os.setPriority(nice);
    return true;
  } catch {
    return false; // a sandbox that forbids it: the thread keeps the process's priority
  }
};
