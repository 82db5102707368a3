/** V8 CPU profiles (`.cpuprofile`, the inspector's `Profiler.stop`): what the bench's profilers read of them. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** Self time per function (ms), largest first, from a V8 CPU profile. */
export const selfTimes = (profile: Profile, top: number): Array<{ name: string; ms: number }> => {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const ms = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byNode.get(samples[i]!);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    ms.set(name, (ms.get(name) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0) / 1000);
  }
  return [...ms].map(([name, t]) => ({ name, ms: t })).sort((a, b) => b.ms - a.ms).slice(0, top);
};
