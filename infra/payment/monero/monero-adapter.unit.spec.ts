import { describe, expect, it } from 'vitest';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { digestAuthorization, parseDigestChallenge } from './digest-auth.ts';
import { paymentsOfTransfers } from './monero-payment-processor.ts';
import { formatXmr, moneroPaymentUri } from './payment-uri.ts';
import { parseWalletJson } from './wallet-json.ts';

const TX1 = 'd12acd360188c66f63029719d45b52944f05ac6b683770cc04a265fa199e5473';
const TX2 = 'b68427e63d343cab12a9b3c3877235ec872d920b2d6286f89476f765001b7c86';

const transfer = (fields: Record<string, string>) =>
  `{"amount":${fields.amount ?? '1500000000000'},"double_spend_seen":${fields.ds ?? 'false'},"height":${fields.height ?? '0'},` +
  `${fields.confirmations ? `"confirmations":${fields.confirmations},` : ''}"subaddr_index":{"major":${fields.major ?? '0'},"minor":${fields.minor ?? '1'}},` +
  `"timestamp":1795550457,"txid":"${fields.txid ?? TX1}","type":"${fields.type ?? 'pool'}","unlock_time":${fields.unlock ?? '0'}}`;

describe('Monero adapter: payments from get_transfers', () => {
  it('maps pool and mined entries, amounts exact, one payment per transaction and subaddress', () => {
    const result = parseWalletJson(
      `{"pool":[${transfer({ txid: TX2, amount: '18446744073709551615' })}],"in":[${transfer({ type: 'in', height: '81', confirmations: '3' })}]}`,
    );
    expect(paymentsOfTransfers(result, 0, new Set([1]))).toEqual([
      {
        paymentId: `${TX1}:0/1`,
        txid: TX1,
        addressIndex: 1,
        amount: 1_500_000_000_000n,
        confirmations: 3,
        inPool: false,
        height: 81,
        receivedAt: new Date(1795550457_000),
        doubleSpendSeen: false,
        timeLocked: false,
      },
      {
        paymentId: `${TX2}:0/1`,
        txid: TX2,
        addressIndex: 1,
        amount: 18_446_744_073_709_551_615n,
        confirmations: 0,
        inPool: true,
        height: null,
        receivedAt: new Date(1795550457_000),
        doubleSpendSeen: false,
        timeLocked: false,
      },
    ]);
  });

  it('keeps a payment read both in the pool and in a block once, as mined', () => {
    const result = parseWalletJson(`{"pool":[${transfer({})}],"in":[${transfer({ type: 'in', height: '90', confirmations: '1' })}]}`);
    expect(paymentsOfTransfers(result, 0, new Set([1]))).toMatchObject([{ paymentId: `${TX1}:0/1`, inPool: false, confirmations: 1 }]);
  });

  it('leaves out other accounts and subaddresses, and reports double spends and time locks', () => {
    const result = parseWalletJson(
      `{"pool":[${transfer({ minor: '2', ds: 'true' })},${transfer({ major: '1', txid: TX2 })}],"in":[${transfer({ type: 'in', minor: '3', height: '5', confirmations: '9', unlock: '5000', txid: TX2 })}]}`,
    );
    expect(paymentsOfTransfers(result, 0, new Set([2, 3]))).toMatchObject([
      { addressIndex: 3, timeLocked: true, doubleSpendSeen: false },
      { addressIndex: 2, doubleSpendSeen: true, timeLocked: false },
    ]);
    expect(paymentsOfTransfers(parseWalletJson('{}'), 0, new Set([1]))).toEqual([]);
  });

  it('treats a malformed answer as a wallet that cannot serve', () => {
    for (const bad of ['{"in":{}}', `{"in":[${transfer({ txid: 'nothex' })}]}`, `{"pool":[${transfer({ amount: '1.5' })}]}`, `{"pool":[${transfer({ minor: '-1' })}]}`, '[]'])
      expect(() => paymentsOfTransfers(parseWalletJson(bad), 0, new Set([1])), bad).toThrow(PaymentProcessorUnavailableError);
  });
});

describe('Monero adapter: payment URIs', () => {
  it('writes the amount in XMR, exact, without trailing zeros', () => {
    expect(formatXmr(1_500_000_000_000n)).toBe('1.5');
    expect(formatXmr(1_000_000_000_000n)).toBe('1');
    expect(formatXmr(1n)).toBe('0.000000000001');
    expect(formatXmr(0n)).toBe('0');
    expect(formatXmr(18_446_744_073_709_551_615n)).toBe('18446744.073709551615');
    expect(() => formatXmr(-1n)).toThrow(RangeError);
  });

  it('makes a monero: URI with the amount and the description encoded', () => {
    expect(moneroPaymentUri('8Bxyz', 2_250_000_000_000n, 'Relay invoice inv_1 & co')).toBe('monero:8Bxyz?tx_amount=2.25&tx_description=Relay%20invoice%20inv_1%20%26%20co');
    expect(moneroPaymentUri('8Bxyz', 1n, '')).toBe('monero:8Bxyz?tx_amount=0.000000000001');
  });
});

describe('Monero adapter: Digest challenge', () => {
  it("picks MD5 among monero-wallet-rpc's two challenges joined in one header", () => {
    const header =
      'Digest qop="auth",algorithm=MD5-sess,realm="monero-rpc",nonce="abc==",stale=false, Digest qop="auth",algorithm=MD5,realm="monero-rpc",nonce="xyz==",stale=false';
    expect(parseDigestChallenge(header)).toEqual({ realm: 'monero-rpc', nonce: 'xyz==', qop: 'auth', opaque: undefined, algorithm: 'MD5' });
    expect(parseDigestChallenge('Basic realm="x"')).toBeUndefined();
    expect(parseDigestChallenge(null)).toBeUndefined();
  });

  it("computes RFC 7616's response (the RFC 2617 example's values)", () => {
    // RFC 2617 section 3.5, with qop=auth: the response is 6629fae49393a05397450978507c4ef1.
    const challenge = { realm: 'testrealm@host.com', nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093', qop: 'auth', opaque: '5ccc069c403ebaf9f0171e9517f40e41', algorithm: 'MD5' };
    const header = digestAuthorization(challenge, { username: 'Mufasa', password: 'Circle Of Life', method: 'GET', uri: '/dir/index.html', count: 1, cnonce: '0a4f113b' });
    expect(header).toContain('response="6629fae49393a05397450978507c4ef1"');
    expect(header).toContain('nc=00000001');
    expect(header).toContain('opaque="5ccc069c403ebaf9f0171e9517f40e41"');
  });
});
