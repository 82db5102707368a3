/** V8 CPU profiles (`.cpuprofile`, the inspector's `Profiler.stop`): what the bench's profilers read of them. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** The time sample `i` stands for, in ms: until the next sample (V8's deltas lead to each sample). */
const sampleMs = (profile: Profile, i: number): number => (profile.timeDeltas?.[i + 1] ?? profile.timeDeltas?.[i] ?? 0) / 1000;

/** What a thread did in a sample: V8's pseudo-frames, else JavaScript (builtins included). */
export type Activity = 'idle' | 'gc' | 'program' | 'javascript';
const PSEUDO_FRAMES: Readonly<Record<string, Activity>> = { '(idle)': 'idle', '(garbage collector)': 'gc', '(program)': 'program' };
export const activityOf = (functionName: string): Activity => PSEUDO_FRAMES[functionName] ?? 'javascript';

/** Time per activity (ms) in a V8 CPU profile. */
export const activityTimes = (profile: Profile): Map<Activity, number> => {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const times = new Map<Activity, number>();
  (profile.samples ?? []).forEach((id, i) => {
    const activity = activityOf(byNode.get(id)?.callFrame.functionName ?? '');
    times.set(activity, (times.get(activity) ?? 0) + sampleMs(profile, i));
  });
  return times;
};

/** Self time per function (ms), largest first, from a V8 CPU profile. */
export const selfTimes = (profile: Profile, top: number): Array<{ name: string; ms: number }> => {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const ms = new Map<string, number>();
  (profile.samples ?? []).forEach((id, i) => {
    const node = byNode.get(id);
    if (!node) return;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    ms.set(name, (ms.get(name) ?? 0) + sampleMs(profile, i));
  });
  return [...ms].map(([name, t]) => ({ name, ms: t })).sort((a, b) => b.ms - a.ms).slice(0, top);
};

/** A frame of Relay's own code (its build or its sources), not Node's or a dependency's. */
const ownCode = (url: string) => /\/(dist|apps|infra|domain|projections)\//.test(url) && !url.includes('node_modules');

/**
 * Where a thread's samples were, slot by slot (`slotUs` long, from `originUs` on V8's clock): each
 * sample counted under the innermost frame of Relay's own code on its stack (so that JSON.parse
 * counts under the function that parses), else the sampled frame; idle and garbage collection as
 * such. The `top` largest shares of each slot.
 */
export const timeline = (profile: Profile, originUs: number, slotUs: number, top: number): Array<{ atUs: number; shares: Array<{ name: string; ms: number }> }> => {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const label = (id: number): string => {
    const sampled = byNode.get(id)!.callFrame;
    if (activityOf(sampled.functionName) !== 'javascript') return sampled.functionName;
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const { functionName, url, lineNumber } = byNode.get(at)!.callFrame;
      if (ownCode(url)) return `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber + 1}`;
    }
    return sampled.functionName || '(anonymous)';
  };
  const slots = new Map<number, Map<string, number>>();
  let t = profile.startTime;
  (profile.samples ?? []).forEach((id, i) => {
    t += profile.timeDeltas![i]!;
    const slot = Math.floor((t - originUs) / slotUs);
    const shares = slots.get(slot) ?? new Map<string, number>();
    const name = label(id);
    shares.set(name, (shares.get(name) ?? 0) + sampleMs(profile, i));
    slots.set(slot, shares);
  });
  return [...slots]
    .sort(([a], [b]) => a - b)
    .map(([slot, shares]) => ({
      atUs: slot * slotUs,
      shares: [...shares].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms).slice(0, top),
    }));
};
