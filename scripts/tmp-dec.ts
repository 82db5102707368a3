import fs from 'node:fs';
import { isAscii } from 'node:buffer';
const data = fs.readFileSync('/tmp/relay-scale-du0O4T/read-models.postgres.json');
const i = data.indexOf(10) + 1;
const apps = data.subarray(i + 3167818, i + 3167818 + 23958021);
for (let r = 0; r < 3; r++) {
  let t = performance.now(); const a = apps.toString('utf8'); const tu = performance.now() - t;
  t = performance.now(); const ok = isAscii(apps); const ta = performance.now() - t;
  t = performance.now(); const b = apps.toString('latin1'); const tl = performance.now() - t;
  t = performance.now(); JSON.parse(a); const pu = performance.now() - t;
  t = performance.now(); JSON.parse(b); const pl = performance.now() - t;
  console.log(`utf8 ${tu.toFixed(0)} isAscii ${ta.toFixed(1)} (${ok}) latin1 ${tl.toFixed(0)} parse(utf8 str) ${pu.toFixed(0)} parse(latin1 str) ${pl.toFixed(0)} ms`);
}
