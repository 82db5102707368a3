/**
 * The customer of the Monero suites: pays from its wallet and mines on the private chain, so that
 * a test's blocks hold the payments it made before them.
 *
 * A transaction the wallet hands to monerod enters the pool as `local`, and monerod's P2P thread
 * relays it a little later: Dandelion++ stem first (with no peers that fails at once), then fluff.
 * A block template leaves `local` transactions out; it takes fluff ones, and on regtest stem ones
 * too (monero-project/monero: `matches_category` in src/blockchain_db/blockchain_db.cpp,
 * `fill_block_template` in src/cryptonote_core/tx_pool.cpp, `m_mempool.init(..., m_nettype ==
 * FAKECHAIN)` in src/cryptonote_core/cryptonote_core.cpp). Under load a block mined right after
 * `transfer` returned could miss the payment, and nothing confirmed it (CI, sessions 30 and 39). So
 * `pay` resolves once monerod reports the transaction `relayed` (`set_relayed` in tx_pool.cpp sets
 * it at the stem and at the fluff).
 */
import type { WalletRpcClient } from '../../infra/payment/monero/wallet-rpc-client.ts';
import { eventually } from './eventually.ts';

/** monerod's other (non JSON-RPC) routes, such as /pop_blocks and /get_transaction_pool. */
export const daemonPost = async (daemonRpcUrl: string, route: string, body: unknown): Promise<Record<string, unknown>> => {
  const response = await fetch(`${daemonRpcUrl}${route}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  const answer = (await response.json()) as { status?: string };
  if (answer.status !== 'OK') throw new Error(`monerod ${route} answered ${JSON.stringify(answer)}`);
  return answer;
};

export interface MoneroCustomer {
  /** Pays `amount` piconero to `address`; resolves with the transaction id once a block would take it. */
  pay(address: string, amount: bigint): Promise<string>;
  /**
   * Mines `blocks` blocks to the customer. The pool goes into the first: a transaction relayed
   * before and still in the pool after fails the call, naming it, rather than a test waiting out
   * its deadline for confirmations that cannot come.
   */
  mine(blocks: number): Promise<void>;
  /** Mines `blocks` blocks whatever the pool holds (to clear what an earlier test left). */
  mineAnyway(blocks: number): Promise<void>;
}

export const moneroCustomer = (options: { customer: WalletRpcClient; daemon: WalletRpcClient; daemonRpcUrl: string; customerAddress: string }): MoneroCustomer => {
  const { customer, daemon, daemonRpcUrl, customerAddress } = options;
  const pool = async () => ((await daemonPost(daemonRpcUrl, '/get_transaction_pool', {})) as { transactions?: Array<{ id_hash: string; relayed: boolean }> }).transactions ?? [];
  const relayed = async (txid: string) => {
    const entry = (await pool()).find((t) => t.id_hash === txid);
    if (!entry?.relayed) throw new Error(`monerod has not relayed ${txid} yet (${entry ? 'local in its pool' : 'not in its pool'}): a block would leave it out`);
  };
  const mineAnyway = async (blocks: number) => {
    await daemon.call('generateblocks', { amount_of_blocks: blocks, wallet_address: customerAddress });
  };
  return {
    pay: async (address, amount) => {
      await customer.call('refresh');
      const sent = (await customer.call('transfer', { destinations: [{ amount, address }], account_index: 0, priority: 0 })) as { tx_hash?: unknown };
      if (typeof sent.tx_hash !== 'string') throw new Error('the customer wallet gave no transaction id');
      const txid = sent.tx_hash;
      await eventually(() => relayed(txid), 20_000);
      return txid;
    },
    mine: async (blocks) => {
      const before = new Set((await pool()).filter((t) => t.relayed).map((t) => t.id_hash));
      await mineAnyway(blocks);
      const left = (await pool()).filter((t) => before.has(t.id_hash)).map((t) => t.id_hash);
      if (left.length > 0) throw new Error(`monerod left ${left.join(', ')} in its pool, out of the block`);
    },
    mineAnyway,
  };
};
