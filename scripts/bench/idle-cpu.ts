/**
 * `node --import tsx scripts/bench/idle-cpu.ts <pid> [seconds 20] [windows 3]`: the CPU a running
 * Relay uses, per kind of thread (main, pipeline, the rest), in consecutive windows and over all
 * of them, in % of a core. Issue 49: idle settled by hand, on a store the scale bench kept.
 */
import { idleCpu, type ThreadCpu } from './scale/relay-run.ts';

const [pidArg, secondsArg, windowsArg] = process.argv.slice(2);
if (!pidArg) throw new Error('usage: idle-cpu.ts <pid> [seconds] [windows]');
const pid = Number(pidArg);
const seconds = Number(secondsArg ?? 20);
const windows = Number(windowsArg ?? 3);
const percent = (msPerSecond: number) => `${(msPerSecond / 10).toFixed(2)} %`;
const line = (cpu: ThreadCpu) => `${percent(cpu.total)} (main ${percent(cpu.main)}, pipeline ${percent(cpu.pipeline)}, other ${percent(cpu.other)})`;

const all: ThreadCpu[] = [];
for (let i = 0; i < windows; i++) {
  const cpu = await idleCpu(pid, seconds);
  all.push(cpu);
  console.log(`window ${i + 1} (${seconds} s): ${line(cpu)}`);
}
const mean = (pick: (c: ThreadCpu) => number) => all.reduce((s, c) => s + pick(c), 0) / all.length;
console.log(`over ${windows * seconds} s: ${line({ total: mean((c) => c.total), main: mean((c) => c.main), pipeline: mean((c) => c.pipeline), other: mean((c) => c.other) })}`);
