import type { SnodeHttp } from './snode-http.ts';
import type { HttpAnswer } from './snode-transport.ts';
import { SnodeUnreachableError } from './snode-http.ts';
import { agreedNodes, serviceNodesFrom, shuffled, type AddressPolicy, type Snode } from './snode-pool.ts';

/**
 * The service-node pool of Relay's Session client: where every swarm lookup, onion path and storage
 * call starts. No single node's answer makes it. The first pool is what the seed nodes that
 * answered agree on (their certificates pinned by the caller's SnodeHttp); a refresh asks three pool
 * nodes (oxend's `get_service_nodes`) and keeps only what all three list alike, at least
 * `minAgreement` nodes (session-desktop `snodePool.ts` tryToGetConsensusWithSnodesWithRetries),
 * else the seeds are asked again. Swarm answers are taken only as far as the pool knows their
 * members (`known`), with the pool's addresses and keys.
 */
export interface NodePoolOptions {
  readonly seedNodes: readonly string[];
  readonly http: Pick<SnodeHttp, 'seedRpc'>;
  /** One storage RPC call to a pool node (through the client's transport); undefined when it got no answer. */
  readonly ask: (node: Snode, method: string, params: object) => Promise<HttpAnswer | undefined>;
  readonly addresses: AddressPolicy;
  readonly maxSize: number;
  /** Below this many nodes the pool is fetched again. */
  readonly minSize: number;
  readonly refreshMs: number;
  readonly minAgreement: number;
  readonly now: () => number;
  readonly onSuccess: () => void;
  readonly onProblem: (reason: string) => void;
}

/** No pool could be made: no seed answered with a usable list, or the seeds agree on nothing. */
export class NoPoolError extends Error {
  override readonly name = 'NoPoolError';
}

/** Pool nodes asked at once for a refresh: their answers must agree (Session Desktop asks three). */
const AGREEMENT_SOURCES = 3;
const SERVICE_NODE_FIELDS = { public_ip: true, storage_port: true, pubkey_x25519: true, pubkey_ed25519: true, storage_server_version: true };

export class NodePool {
  private pool: Snode[] = [];
  private fetchedAt = 0;
  private refreshing: Promise<void> | undefined;
  private lastProblem: string | undefined;
  private readonly minSize: number;
  private readonly minAgreement: number;

  constructor(private readonly options: NodePoolOptions) {
    if (options.seedNodes.length === 0) throw new Error('at least one Session seed node is needed');
    this.minSize = Math.min(options.minSize, options.maxSize);
    this.minAgreement = Math.max(1, options.minAgreement);
  }

  nodes(): readonly Snode[] {
    return this.pool;
  }

  size(): number {
    return this.pool.length;
  }

  /** Fetches the pool when it is too small, or refreshes it when stale; one fetch at a time. */
  async ensure(): Promise<void> {
    const stale = this.options.now() - this.fetchedAt > this.options.refreshMs;
    if (this.pool.length >= this.minSize && !stale) return;
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = undefined;
    });
    await this.refreshing;
  }

  /** Leaves a node out (it failed too often) until the next refresh lists it again. */
  drop(ed25519: string): void {
    this.pool = this.pool.filter((n) => n.ed25519 !== ed25519);
  }

  /**
   * The members of a swarm answer that the pool knows, as the pool knows them (address and keys):
   * a node cannot send Relay to an address, or a key, the agreed pool does not hold (as Session
   * Desktop keeps only swarm members found in its pool: `snodePool.ts` getSwarmFor).
   */
  known(nodes: Snode[] | undefined): Snode[] | undefined {
    if (!nodes) return undefined;
    const byKey = new Map(this.pool.map((n) => [n.ed25519, n]));
    const known = nodes.flatMap((n) => {
      const pooled = byKey.get(n.ed25519);
      return pooled ? [pooled] : [];
    });
    return known.length > 0 ? known : undefined;
  }

  private problem(reason: string): void {
    this.lastProblem = reason;
    this.options.onProblem(reason);
  }

  private async refresh(): Promise<void> {
    if (this.pool.length >= Math.max(this.minSize, AGREEMENT_SOURCES)) {
      const sources = shuffled(this.pool).slice(0, AGREEMENT_SOURCES);
      const lists = await Promise.all(sources.map((node) => this.serviceNodesOf(node)));
      const agreed = lists.every((list) => list !== undefined) ? agreedNodes(lists as Snode[][]) : [];
      if (agreed.length >= Math.max(this.minSize, this.minAgreement)) {
        this.pool = agreed.slice(0, this.options.maxSize);
        this.fetchedAt = this.options.now();
        return;
      }
      this.problem(`the service-node lists of ${AGREEMENT_SOURCES} nodes agreed on ${agreed.length} node(s), fewer than ${this.minAgreement}`);
    }
    const answered = await this.fromSeeds();
    const agreed = agreedNodes(answered);
    if (agreed.length > 0) {
      this.pool = shuffled(agreed).slice(0, this.options.maxSize);
      this.fetchedAt = this.options.now();
      this.options.onSuccess();
      return;
    }
    if (answered.length > 1) this.problem(`the ${answered.length} seed nodes that answered agree on no service node`);
    if (this.pool.length === 0) throw new NoPoolError(answered.length > 1 ? this.lastProblem! : `no seed node gave a service-node list (${this.lastProblem ?? 'no answer'})`);
  }

  /** The lists of every seed that answered with usable nodes. */
  private async fromSeeds(): Promise<Snode[][]> {
    const answered: Snode[][] = [];
    await Promise.all(
      this.options.seedNodes.map(async (seed) => {
        try {
          const answer = await this.options.http.seedRpc(seed, 'get_n_service_nodes', { active_only: true, fields: SERVICE_NODE_FIELDS });
          const { nodes, refused } = serviceNodesFrom(statesOf(answer), this.options.maxSize * 2, this.options.addresses);
          if (nodes.length > 0) answered.push(nodes);
          else this.problem(`seed ${new URL(seed).host} gave no usable service nodes${refused > 0 ? ` (${refused} with an address that is not public)` : ''}`);
        } catch (error) {
          if (!(error instanceof SnodeUnreachableError)) throw error;
          this.problem(error.message);
        }
      }),
    );
    return answered;
  }

  /** One pool node's list of the service nodes (oxend's `get_service_nodes`), or undefined. */
  private async serviceNodesOf(node: Snode): Promise<Snode[] | undefined> {
    const answer = await this.options.ask(node, 'oxend_request', { endpoint: 'get_service_nodes', params: { active_only: true, fields: SERVICE_NODE_FIELDS } });
    const { nodes } = serviceNodesFrom(answer ? statesOf(answer) : undefined, this.options.maxSize * 2, this.options.addresses);
    return nodes.length > 0 ? nodes : undefined;
  }
}

function statesOf(answer: HttpAnswer): unknown {
  return answer.status === 200 ? (answer.body as { result?: { service_node_states?: unknown } } | undefined)?.result?.service_node_states : undefined;
}
