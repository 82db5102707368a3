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
  /** With `snapshots`: per thread (main first), the kinds of object that hold the most of its heap (self sizes, MB). */
  readonly largest?: Array<Array<{ readonly kind: string; readonly mb: number }>>;
}

/**
 * What holds a heap, from a V8 heap snapshot: self sizes summed by node type and name (a
 * constructor's name for objects and native ones, the node type in parentheses for the rest: "(code)",
 * "(string)", "(array)" ...), largest first.
 */
export const summariseSnapshot = (json: string, top = 6): Array<{ kind: string; mb: number }> => {
  const snapshot = JSON.parse(json) as { snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }; nodes: number[]; strings: string[] };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [number, number, number];
  const sizes = new Map<string, number>();
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + typeAt]!]!;
    const kind = type === 'object' || type === 'native' ? snapshot.strings[snapshot.nodes[i + nameAt]!]! : `(${type})`;
    sizes.set(kind, (sizes.get(kind) ?? 0) + snapshot.nodes[i + sizeAt]!);
  }
  return [...sizes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([kind, bytes]) => ({ kind: kind.length > 40 ? `${kind.slice(0, 37)}...` : kind, mb: bytes / 1024 / 1024 }));
};

export const collectAndMeasure = async (inspectorPort: number, options: { snapshots?: boolean } = {}): Promise<HeapFigures> => {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const socket = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => (socket.once('open', () => resolve()), socket.once('error', reject)));
  let next = 1;
  const waiting = new Map<number, (result: Record<string, unknown>) => void>();
  const workerWaiting = new Map<string, (result: Record<string, unknown>) => void>();
  /** Heap snapshot chunks as they stream in, per session ('' for the main thread). */
  const chunks = new Map<string, string[]>();
  const workers: string[] = [];
  socket.on('message', (raw: Buffer) => {
    const message = JSON.parse(raw.toString()) as Reply;
    if (message.id !== undefined) waiting.get(message.id)?.(message.result ?? {});
    else if (message.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get('')?.push(String(message.params!.chunk));
    else if (message.method === 'NodeWorker.attachedToWorker') workers.push(String(message.params!.sessionId));
    else if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      const sessionId = String(message.params!.sessionId);
      const inner = JSON.parse(String(message.params!.message)) as Reply;
      if (inner.id !== undefined) workerWaiting.get(`${sessionId}:${inner.id}`)?.(inner.result ?? {});
      else if (inner.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get(sessionId)?.push(String(inner.params!.chunk));
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
    const usedMb = used.map((bytes) => bytes / 1024 / 1024);
    if (!options.snapshots) return { usedMb };
    const largest: Array<Array<{ kind: string; mb: number }>> = [];
    for (const sessionId of ['', ...workers]) {
      chunks.set(sessionId, []);
      if (sessionId === '') await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      else await callWorker(sessionId, 'HeapProfiler.takeHeapSnapshot');
      largest.push(summariseSnapshot(chunks.get(sessionId)!.join('')));
      chunks.delete(sessionId);
    }
    return { usedMb, largest };
  } finally {
    socket.close();
  }
};
