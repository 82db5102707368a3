/** The measures every step of `npm run bench` takes alike. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** The value at percentile `p` (nearest rank) of `values`. */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** A process's resident memory, in MB (what `ps` says). */
export const rssMb = (pid: number) => Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)]).toString().trim()) / 1024;

/**
 * Where a process's resident memory is, from /proc/<pid>/smaps: the V8 heaps and thread arenas
 * (anonymous mappings), the C heap (`[heap]`), code and data mapped from files (node, native
 * addons), and shared memory (SQLite's WAL indexes), in MB.
 */
export const memoryMaps = (pid: number): { anonymousMb: number; cHeapMb: number; filesMb: number; sharedMb: number } => {
  const totals = { anonymousMb: 0, cHeapMb: 0, filesMb: 0, sharedMb: 0 };
  let kind: keyof typeof totals = 'anonymousMb';
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (mapping) {
      const name = mapping[1]!;
      kind = name === '[heap]' ? 'cHeapMb' : name.endsWith('-shm') || name.startsWith('/dev/shm') ? 'sharedMb' : name.startsWith('/') ? 'filesMb' : 'anonymousMb';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) totals[kind] += Number(rss[1]) / 1024;
  }
  return totals;
};
