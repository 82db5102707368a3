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

/** USER_HZ: Linux reports CPU times in 1/100 s on every architecture Relay runs on. */
const CLOCK_TICKS = 100;

/** CPU time a process has used so far, all its threads, in ms (user + system, summed over /proc/<pid>/task). */
export const cpuMs = (pid: number) =>
  fs.readdirSync(`/proc/${pid}/task`).reduce((sum, task) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return sum + ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
    } catch {
      return sum; // a thread that ended meanwhile
    }
  }, 0);

/** How much CPU a process uses per second of wall time over `seconds`, doing whatever it does (ms/s). */
export const cpuMsPerSecond = async (pid: number, seconds: number) => {
  const before = cpuMs(pid);
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return ((cpuMs(pid) - before) * 1000) / (performance.now() - start);
};
