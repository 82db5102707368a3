import { describe, expect, it } from 'vitest';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { parseRpcJson } from './bitcoin-json.ts';
import { indexOfKeyPath, paymentsOfTransaction } from './bitcoin-payment-processor.ts';
import { sortPayments } from '../processor-answers.ts';

const TXID = 'c458a38452e0c704966560f9a58628e341248edbd52d48f0d8dec196b9e100ff';
const ADDRESS = 'rltc1qaetxm97uxuftmfm64edkcrl33jd4pg7tt92ekq';

/** A `gettransaction` answer as litecoind 0.21 writes it for a watch-only wallet. */
const transaction = (fields: string, details: string) =>
  parseRpcJson(`{"amount":0.03333334,${fields},"txid":"${TXID}","walletconflicts":[],"time":1795556210,"timereceived":1795556210,"bip125-replaceable":"no","details":[${details}],"hex":"00"}`);
const receive = (vout: number, amount: string, address = ADDRESS) =>
  `{"involvesWatchonly":true,"address":"${address}","category":"receive","amount":${amount},"label":"relay invoice inv_1","vout":${vout}}`;

describe('Bitcoin payment processor: reading the wallet', () => {
  it('takes the address index from the last step of the derivation path', () => {
    expect(indexOfKeyPath('m/0/7')).toBe(7);
    expect(indexOfKeyPath("m/0'/0'/12'")).toBe(12);
    expect(indexOfKeyPath("m/84'/1'/0'/0/3")).toBe(3);
    expect(indexOfKeyPath('m/84h/1h/0h/0/3')).toBe(3);
    expect(indexOfKeyPath('m')).toBeUndefined();
    expect(indexOfKeyPath(undefined)).toBeUndefined();
    expect(indexOfKeyPath('m/0/x')).toBeUndefined();
  });

  it('reads a payment in the mempool', () => {
    expect(paymentsOfTransaction(transaction('"confirmations":0,"trusted":false', receive(1, '0.03333334')), ADDRESS, 5)).toEqual([
      {
        paymentId: `${TXID}:1`,
        txid: TXID,
        addressIndex: 5,
        amount: 3_333_334n,
        confirmations: 0,
        inPool: true,
        height: null,
        receivedAt: new Date(1795556210_000),
        doubleSpendSeen: false,
        timeLocked: false,
      },
    ]);
  });

  it('reads a mined payment, one entry per output to the address, none to other addresses or of other categories', () => {
    const details = [receive(0, '0.1'), receive(2, '92233720368.54775807'), receive(3, '1', 'rltc1qother'), `{"address":"${ADDRESS}","category":"send","amount":-0.5,"vout":4}`, receive(2, '92233720368.54775807')].join(',');
    const payments = paymentsOfTransaction(
      transaction('"confirmations":3,"blockhash":"00","blockheight":104,"blockindex":1,"blocktime":1795556300', details),
      ADDRESS,
      5,
    );
    expect(payments.map((p) => [p.paymentId, p.amount, p.confirmations, p.inPool, p.height])).toEqual([
      [`${TXID}:0`, 10_000_000n, 3, false, 104],
      [`${TXID}:2`, 9_223_372_036_854_775_807n, 3, false, 104],
    ]);
  });

  it('leaves out a conflicted transaction, and tells a seen double spend', () => {
    expect(paymentsOfTransaction(transaction('"confirmations":-1', receive(1, '0.1')), ADDRESS, 5)).toEqual([]);
    const conflicted = parseRpcJson(
      `{"confirmations":0,"txid":"${TXID}","walletconflicts":["${'a'.repeat(64)}"],"time":1,"details":[${receive(1, '0.1')}]}`,
    );
    expect(paymentsOfTransaction(conflicted, ADDRESS, 5)[0]).toMatchObject({ doubleSpendSeen: true, inPool: true });
  });

  it('refuses a malformed answer as unavailable rather than guessing', () => {
    const bad = [
      transaction('"confirmations":1', receive(1, '0.1')), // mined without its height
      transaction('"confirmations":0', receive(1, '0.000000001')), // finer than a litoshi
      transaction('"confirmations":0', receive(1, '"0.1"')), // an amount as text
      transaction('"confirmations":"0"', receive(1, '0.1')),
      parseRpcJson('{"confirmations":0,"txid":"nope","details":[]}'),
      parseRpcJson(`{"confirmations":0,"txid":"${TXID}"}`),
      parseRpcJson('[]'),
    ];
    for (const answer of bad) expect(() => paymentsOfTransaction(answer, ADDRESS, 5)).toThrow(PaymentProcessorUnavailableError);
  });

  it('orders payments oldest first, the mempool last', () => {
    const at = (id: string, height: number | null, time: number) =>
      ({ paymentId: id, txid: id, addressIndex: 1, amount: 1n, confirmations: height ? 1 : 0, inPool: height === null, height, receivedAt: new Date(time), doubleSpendSeen: false, timeLocked: false }) as const;
    expect(sortPayments([at('d', null, 1), at('c', 9, 5), at('b', 9, 2), at('a', 3, 9)]).map((p) => p.paymentId)).toEqual(['a', 'b', 'c', 'd']);
  });
});
