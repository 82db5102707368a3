/**
 * Calls `tick` at every multiple of `periodMs` of the wall clock (Date.now() % periodMs === 0), not
 * `periodMs` after whenever it was started. The embedded log's lease renewals use it: every renewal
 * is a commit to `broker.db`, and every commit wakes the watches of each thread of each process on
 * the file (commit-watch.ts: a look at once, then more for 100 ms). Renewals of all the consumers
 * and role leases of all processes fall on the same moments, so they wake the watches once per
 * period instead of once per lease holder. Re-armed from the clock at each tick: no drift. The timer
 * keeps no process alive.
 */
export const alignedTicks = (periodMs: number, tick: () => void): { stop(): void } => {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** To the first multiple at least half a period away: a timer that fires a little before its multiple (the loop's clock is not Date.now()) does not fire again at once. */
  const arm = () => {
    const now = Date.now();
    timer = setTimeout(fire, Math.ceil((now + periodMs / 2) / periodMs) * periodMs - now);
    timer.unref();
  };
  const fire = () => {
    if (stopped) return;
    arm();
    tick();
  };
  arm();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
};
