/**
 * Where each thread's heap goes, from V8 heap snapshots taken through the inspector (the process
 * runs with `--inspect`), summed by kind as scripts/bench/inspector.ts sums them: a constructor's
 * name for objects and native ones, the node type in parentheses for the rest. Unlike that one it
 * reads the snapshot as it streams in, without holding it: a snapshot of a heap of a few hundred MB
 * is a JSON text larger than the longest string V8 allows.
 */
import WebSocket from 'ws';

export interface Kind {
  readonly kind: string;
  readonly mb: number;
}

/** Reads a heap snapshot's JSON chunk by chunk; `largest()` once the last chunk is in. */
export class SnapshotSummary {
  private state: 'header' | 'nodes' | 'skip' | 'strings' = 'header';
  private buffer = '';
  private width = 0;
  private typeAt = 0;
  private nameAt = 0;
  private sizeAt = 0;
  private types: string[] = [];
  private nodeTypes = new Int32Array(0);
  private nodeNames = new Int32Array(0);
  private nodeSizes = new Float64Array(0);
  private field = 0;
  private node = 0;
  private number = 0;
  private digits = false;
  private needed = new Map<number, string | undefined>();
  private stringIndex = 0;
  private inString = false;
  private escaped = false;
  private raw = '';

  push(chunk: string): void {
    if (this.state === 'header') {
      this.buffer += chunk;
      const at = this.buffer.indexOf('"nodes":[');
      if (at === -1) return;
      const header = JSON.parse(`${this.buffer.slice(0, at).trim().replace(/,$/, '')}}`) as { snapshot: { meta: { node_fields: string[]; node_types: [string[]] }; node_count: number } };
      const fields = header.snapshot.meta.node_fields;
      this.width = fields.length;
      [this.typeAt, this.nameAt, this.sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
      this.types = header.snapshot.meta.node_types[0];
      const count = header.snapshot.node_count;
      this.nodeTypes = new Int32Array(count);
      this.nodeNames = new Int32Array(count);
      this.nodeSizes = new Float64Array(count);
      const rest = this.buffer.slice(at + '"nodes":['.length);
      this.buffer = '';
      this.state = 'nodes';
      chunk = rest;
    }
    if (this.state === 'nodes') chunk = this.readNodes(chunk);
    if (this.state === 'skip') {
      const text = this.buffer + chunk;
      const at = text.indexOf('"strings":[');
      if (at === -1) {
        this.buffer = text.slice(-16);
        return;
      }
      this.buffer = '';
      this.state = 'strings';
      const objectTypes = new Set(['object', 'native'].map((t) => this.types.indexOf(t)));
      for (let i = 0; i < this.node; i++) if (objectTypes.has(this.nodeTypes[i]!)) this.needed.set(this.nodeNames[i]!, undefined);
      chunk = text.slice(at + '"strings":['.length);
    }
    if (this.state === 'strings') this.readStrings(chunk);
  }

  private readNodes(chunk: string): string {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c >= 48 && c <= 57) {
        this.number = this.number * 10 + (c - 48);
        this.digits = true;
        continue;
      }
      if (this.digits) {
        if (this.field === this.typeAt) this.nodeTypes[this.node] = this.number;
        else if (this.field === this.nameAt) this.nodeNames[this.node] = this.number;
        else if (this.field === this.sizeAt) this.nodeSizes[this.node] = this.number;
        if (++this.field === this.width) {
          this.field = 0;
          this.node++;
        }
        this.number = 0;
        this.digits = false;
      }
      if (c === 93 /* ] */) {
        this.state = 'skip';
        return chunk.slice(i + 1);
      }
    }
    return '';
  }

  private readStrings(chunk: string): void {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (!this.inString) {
        if (c === 34 /* " */) {
          this.inString = true;
          start = i + 1;
        }
        continue;
      }
      if (this.escaped) this.escaped = false;
      else if (c === 92 /* \ */) this.escaped = true;
      else if (c === 34) {
        if (this.needed.has(this.stringIndex)) this.needed.set(this.stringIndex, JSON.parse(`"${this.raw}${chunk.slice(start, i)}"`) as string);
        this.raw = '';
        this.inString = false;
        this.stringIndex++;
      }
    }
    if (this.inString && this.needed.has(this.stringIndex)) this.raw += chunk.slice(start);
  }

  largest(top = 8): Kind[] {
    const objectTypes = new Set(['object', 'native'].map((t) => this.types.indexOf(t)));
    const sizes = new Map<string, number>();
    for (let i = 0; i < this.node; i++) {
      const type = this.nodeTypes[i]!;
      const kind = objectTypes.has(type) ? (this.needed.get(this.nodeNames[i]!) ?? '?') : `(${this.types[type]})`;
      sizes.set(kind, (sizes.get(kind) ?? 0) + this.nodeSizes[i]!);
    }
    return [...sizes]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([kind, bytes]) => ({ kind: kind.length > 40 ? `${kind.slice(0, 37)}...` : kind, mb: bytes / 1024 / 1024 }));
  }
}

interface Reply {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

/** A heap snapshot of the main thread and of each worker thread, summarised (main first). */
export const largestKinds = async (inspectorPort: number, top = 8): Promise<Kind[][]> => {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const socket = new WebSocket(target!.webSocketDebuggerUrl, { maxPayload: 1024 * 1024 * 1024 });
  await new Promise<void>((resolve, reject) => (socket.once('open', () => resolve()), socket.once('error', reject)));
  let next = 1;
  const waiting = new Map<string, () => void>();
  const summaries = new Map<string, SnapshotSummary>();
  const workers: string[] = [];
  socket.on('message', (raw: Buffer) => {
    const message = JSON.parse(raw.toString()) as Reply;
    if (message.id !== undefined) waiting.get(`:${message.id}`)?.();
    else if (message.method === 'HeapProfiler.addHeapSnapshotChunk') summaries.get('')?.push(String(message.params!.chunk));
    else if (message.method === 'NodeWorker.attachedToWorker') workers.push(String(message.params!.sessionId));
    else if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      const sessionId = String(message.params!.sessionId);
      const inner = JSON.parse(String(message.params!.message)) as Reply;
      if (inner.id !== undefined) waiting.get(`${sessionId}:${inner.id}`)?.();
      else if (inner.method === 'HeapProfiler.addHeapSnapshotChunk') summaries.get(sessionId)?.push(String(inner.params!.chunk));
    }
  });
  const call = (sessionId: string, method: string, params: Record<string, unknown> = {}) =>
    new Promise<void>((resolve) => {
      const id = next++;
      waiting.set(`${sessionId}:${id}`, resolve);
      const inner = JSON.stringify({ id, method, params });
      if (sessionId === '') socket.send(inner);
      else socket.send(JSON.stringify({ id: next++, method: 'NodeWorker.sendMessageToWorker', params: { sessionId, message: inner } }));
    });
  try {
    await call('', 'NodeWorker.enable', { waitForDebuggerOnStart: false });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const out: Kind[][] = [];
    for (const sessionId of ['', ...workers]) {
      const summary = new SnapshotSummary();
      summaries.set(sessionId, summary);
      await call(sessionId, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      out.push(summary.largest(top));
      summaries.delete(sessionId);
    }
    return out;
  } finally {
    socket.close();
  }
};
