import net from 'node:net';

/**
 * A TCP proxy on loopback that a test can cut and heal (the fault suite, issue 48): one per Relay
 * instance and server, so that one instance loses its Kafka or its PostgreSQL while the others
 * keep theirs. This is how the suite isolates one process (rather than network namespaces: every
 * byte stays on 127.0.0.1, and it needs no packet filter, which this machine's image lacks).
 *
 * A cut behaves as a network partition does, not as a refused or reset connection: nothing is
 * closed, no FIN or RST reaches either side; bytes stop moving both ways (each side's writes are
 * left in the proxy's socket buffers, unread), and new connections are accepted but not carried
 * to the server. So the client sees requests that are never answered and connects that hang, and
 * finds out only by its own timeouts or heartbeats. `heal()` moves the held bytes on and carries
 * the held connections through, as TCP does after a partition that its retransmissions outlived;
 * `heal({ reset: true })` instead destroys every connection made before (one that did not).
 */
export class CuttableProxy {
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket | undefined }>();
  private readonly waiting: Array<() => void> = [];
  private cutNow = false;
  /** Connections accepted in all. */
  connections = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host?: string; port: number }, listenPort = 0): Promise<CuttableProxy> {
    const server = net.createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
    const proxy = new CuttableProxy(server, (server.address() as net.AddressInfo).port, { host: target.host ?? '127.0.0.1', port: target.port });
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  get isCut(): boolean {
    return this.cutNow;
  }

  /** Stops every byte both ways, and holds new connections. */
  cut(): void {
    this.cutNow = true;
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream?.pause();
    }
  }

  /** Moves bytes again (or, with `reset`, destroys every connection made so far), and carries the held connections through. */
  heal(options: { reset?: boolean } = {}): void {
    this.cutNow = false;
    if (options.reset) {
      for (const { client, upstream } of this.pairs) (client.destroy(), upstream?.destroy());
      this.pairs.clear();
    } else
      for (const { client, upstream } of this.pairs) {
        if (!upstream) continue;
        client.resume();
        upstream.resume();
      }
    for (const carry of this.waiting.splice(0)) carry();
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) (client.destroy(), upstream?.destroy());
    this.pairs.clear();
    this.waiting.length = 0;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.connections++;
    const pair: { client: net.Socket; upstream: net.Socket | undefined } = { client, upstream: undefined };
    this.pairs.add(pair);
    const drop = () => {
      client.destroy();
      pair.upstream?.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', drop);
    client.on('close', drop);
    const carry = () => {
      if (client.destroyed) return;
      const upstream = net.connect(this.target.port, this.target.host);
      pair.upstream = upstream;
      upstream.on('error', drop);
      upstream.on('close', drop);
      upstream.on('connect', () => {
        // Bytes are moved by hand, not piped: a cut must hold them where they are.
        client.on('data', (chunk) => {
          if (!upstream.write(chunk)) (client.pause(), upstream.once('drain', () => !this.cutNow && client.resume()));
        });
        upstream.on('data', (chunk) => {
          if (!client.write(chunk)) (upstream.pause(), client.once('drain', () => !this.cutNow && upstream.resume()));
        });
        client.on('end', () => upstream.end());
        upstream.on('end', () => client.end());
        if (this.cutNow) upstream.pause();
        else client.resume();
      });
    };
    if (this.cutNow) this.waiting.push(carry);
    else carry();
  }
}
