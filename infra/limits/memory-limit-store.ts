import type { LimitLease, LimitStore } from './port.ts';

interface Window {
  start: number;
  ms: number;
  granted: number;
}

/** The windows in this process's memory: limits that hold for one process (the embedded default). */
export class MemoryLimitStore implements LimitStore {
  private readonly windows = new Map<string, Window>();

  async lease(key: string, want: number, limit: number, windowMs: number, now: number): Promise<LimitLease> {
    let window = this.windows.get(key);
    if (!window || now >= window.start + window.ms) {
      window = { start: now, ms: windowMs, granted: 0 };
      this.windows.set(key, window);
    }
    const granted = Math.max(0, Math.min(want, limit - window.granted));
    window.granted += granted;
    return { granted, grantedTotal: window.granted, windowStart: window.start, resetAt: window.start + window.ms };
  }

  async giveBack(key: string, windowStart: number, units: number): Promise<void> {
    const window = this.windows.get(key);
    if (window && window.start === windowStart) window.granted = Math.max(0, window.granted - units);
  }

  async evict(now: number): Promise<number> {
    let evicted = 0;
    for (const [key, window] of this.windows) {
      if (now >= window.start + window.ms) {
        this.windows.delete(key);
        evicted++;
      }
    }
    return evicted;
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}
