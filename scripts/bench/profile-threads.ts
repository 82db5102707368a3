/**
 * `node --import tsx scripts/bench/profile-threads.ts <inspector port> [seconds] [top]`: a CPU
 * profile of every thread of a Relay started with `--inspect=127.0.0.1:<port>` (the scale bench
 * starts it so), taken for `seconds` (5), and per thread the functions with the most self time.
 * Issue 49: where an idle or busy Relay with many tenants spends its CPU. The raw profiles are
 * written beside, `/tmp/relay-profile-<thread>.cpuprofile` (open them in Chrome's DevTools).
 */
import fs from 'node:fs';
import WebSocket from 'ws';
import { activityTimes, selfTimes, type Profile } from './cpu-profile.ts';

interface Reply {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
}

const main = async () => {
  const [portArg, secondsArg, topArg] = process.argv.slice(2);
  const seconds = Number(secondsArg ?? 5);
  const top = Number(topArg ?? 25);
  const [target] = (await (await fetch(`http://127.0.0.1:${portArg}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const socket = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => (socket.once('open', () => resolve()), socket.once('error', reject)));
  let next = 1;
  const waiting = new Map<string, (result: Record<string, unknown>) => void>();
  const workers: string[] = [];
  socket.on('message', (raw: Buffer) => {
    const message = JSON.parse(raw.toString()) as Reply;
    if (message.id !== undefined) waiting.get(`:${message.id}`)?.(message.result ?? {});
    else if (message.method === 'NodeWorker.attachedToWorker') workers.push(String(message.params!.sessionId));
    else if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      const sessionId = String(message.params!.sessionId);
      const inner = JSON.parse(String(message.params!.message)) as Reply;
      if (inner.id !== undefined) waiting.get(`${sessionId}:${inner.id}`)?.(inner.result ?? {});
    }
  });
  /** Calls a method in the main thread (session '') or in a worker's. */
  const call = (sessionId: string, method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = next++;
      waiting.set(`${sessionId}:${id}`, resolve);
      if (sessionId === '') socket.send(JSON.stringify({ id, method, params }));
      else {
        const outer = next++;
        socket.send(JSON.stringify({ id: outer, method: 'NodeWorker.sendMessageToWorker', params: { sessionId, message: JSON.stringify({ id, method, params }) } }));
      }
    });
  try {
    await call('', 'NodeWorker.enable', { waitForDebuggerOnStart: false });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the attachments arrive as events
    const sessions = ['', ...workers];
    for (const sessionId of sessions) {
      await call(sessionId, 'Profiler.enable');
      await call(sessionId, 'Profiler.setSamplingInterval', { interval: 200 });
      await call(sessionId, 'Profiler.start');
    }
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    for (const [index, sessionId] of sessions.entries()) {
      const { profile } = (await call(sessionId, 'Profiler.stop')) as unknown as { profile: Profile };
      const thread = index === 0 ? 'main' : `worker-${index}`;
      fs.writeFileSync(`/tmp/relay-profile-${thread}.cpuprofile`, JSON.stringify(profile));
      const busy = activityTimes(profile).get('javascript') ?? 0;
      console.log(`\n== ${thread}: ${busy.toFixed(0)} ms of JavaScript in ${seconds} s (${((busy / seconds / 1000) * 100).toFixed(1)} % of a core)`);
      for (const f of selfTimes(profile, top)) console.log(`${f.ms.toFixed(1).padStart(9)} ms  ${f.name}`);
    }
  } finally {
    socket.close();
  }
};

await main();
