/** The measures every step of `npm run bench` takes alike. */
import { execFileSync } from 'node:child_process';

/** The value at percentile `p` (nearest rank) of `values`. */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** A process's resident memory, in MB (what `ps` says). */
export const rssMb = (pid: number) => Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)]).toString().trim()) / 1024;
