/**
 * A process's heap as the bench reads it: through the V8 inspector (the process runs with
 * `--inspect=127.0.0.1:<port>`), a full collection in the main thread and in every worker thread,
 * then each isolate's heap use. The inspector's own memory counts in RSS: compare runs made alike.
 */
import WebSocket from 'ws';

interface Reply {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
}

export interface HeapFigures {
  /** Heap used after the collection, per thread (main first), in MB. */
  readonly usedMb: number[];
}

export const collectAndMeasure = async (inspectorPort: number): Promise<HeapFigures> => {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const socket = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => (socket.once('open', () => resolve()), socket.once('error', reject)));
  let next = 1;
  const waiting = new Map<number, (result: Record<string, unknown>) => void>();
  const workerWaiting = new Map<string, (result: Record<string, unknown>) => void>();
  const workers: string[] = [];
  socket.on('message', (raw: Buffer) => {
    const message = JSON.parse(raw.toString()) as Reply;
    if (message.id !== undefined) waiting.get(message.id)?.(message.result ?? {});
    else if (message.method === 'NodeWorker.attachedToWorker') workers.push(String(message.params!.sessionId));
    else if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      const inner = JSON.parse(String(message.params!.message)) as Reply;
      if (inner.id !== undefined) workerWaiting.get(`${message.params!.sessionId}:${inner.id}`)?.(inner.result ?? {});
    }
  });
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  const callWorker = (sessionId: string, method: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = next++;
      workerWaiting.set(`${sessionId}:${id}`, resolve);
      void call('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) });
    });
  try {
    await call('NodeWorker.enable', { waitForDebuggerOnStart: false });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the attachments arrive as events
    await call('HeapProfiler.collectGarbage');
    const used = [Number((await call('Runtime.getHeapUsage')).usedSize)];
    for (const sessionId of workers) {
      await callWorker(sessionId, 'HeapProfiler.collectGarbage');
      used.push(Number((await callWorker(sessionId, 'Runtime.getHeapUsage')).usedSize));
    }
    return { usedMb: used.map((bytes) => bytes / 1024 / 1024) };
  } finally {
    socket.close();
  }
};
