import fs from 'node:fs';
const dir = '/tmp/relay-start-profile';
const files = fs.readdirSync(dir).sort();
const profs = files.map((f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, 'utf8')));
const t0 = Math.min(...profs.map((p: any) => p.startTime));
for (const [k, p] of profs.entries()) {
  const byNode = new Map(p.nodes.map((n: any) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const slots = new Map<number, Map<string, number>>();
  let t = p.startTime;
  p.samples.forEach((id: number, i: number) => {
    t += p.timeDeltas[i];
    const slot = Math.floor((t - t0) / 250000);
    // name: the first frame from our dist or a named builtin
    let node: any = byNode.get(id);
    let name = node.callFrame.functionName || '(anon)';
    let cur = id;
    for (let d = 0; d < 40 && cur !== undefined; d++) {
      const n: any = byNode.get(cur);
      if (n.callFrame.url.includes('/dist/') && !n.callFrame.url.includes('node_modules')) { name = `${n.callFrame.functionName || '(anon)'}@${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber + 1}`; break; }
      cur = parent.get(cur)!;
    }
    if (node.callFrame.functionName === '(idle)') name = '(idle)';
    if (node.callFrame.functionName === '(garbage collector)') name = '(gc)';
    const m = slots.get(slot) ?? new Map();
    m.set(name, (m.get(name) ?? 0) + p.timeDeltas[i] / 1000);
    slots.set(slot, m);
  });
  console.log(`== thread ${k}`);
  for (const [slot, m] of [...slots].sort((a, b) => a[0] - b[0])) {
    const top = [...m].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(' | ');
    console.log(`${(slot * 0.25).toFixed(2).padStart(5)} s: ${top}`);
  }
}
