import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseWalletJson, stringifyWalletJson, WalletJsonError } from './wallet-json.ts';

describe('wallet JSON: integers stay exact', () => {
  it('gives integers past 2^53 exactly, where JSON.parse rounds them', () => {
    const text = '{"result":{"balance":18446744073709551615,"amount":9007199254740993,"height":81}}';
    expect(JSON.parse(text).result.amount).toBe(9007199254740992); // what JSON.parse makes of it
    expect(parseWalletJson(text)).toEqual({ result: { balance: 18446744073709551615n, amount: 9007199254740993n, height: 81n } });
  });

  it("reads a get_transfers answer as monero-wallet-rpc prints it", () => {
    const answer = `{
  "id": "0",
  "jsonrpc": "2.0",
  "result": {
    "pool": [{
      "address": "85BvA8pLvjBVX2kfAgj8AfP8tDJ9mczZvAqwEUS6iatsStc9YUc9EveSPWk9Me8TttN4BvKSiVEicPEDw4Jv7Gt1MJkzLhe",
      "amount": 12345678901234567890,
      "amounts": [12345678901234567890],
      "double_spend_seen": false,
      "fee": 2605200000,
      "height": 0,
      "locked": true,
      "note": "",
      "payment_id": "0000000000000000",
      "subaddr_index": {
        "major": 0,
        "minor": 1
      },
      "timestamp": 1795550457,
      "txid": "d12acd360188c66f63029719d45b52944f05ac6b683770cc04a265fa199e5473",
      "type": "pool",
      "unlock_time": 0
    }]
  }
}`;
    const parsed = parseWalletJson(answer) as { result: { pool: Array<Record<string, unknown>> } };
    expect(parsed.result.pool[0]).toMatchObject({ amount: 12345678901234567890n, amounts: [12345678901234567890n], double_spend_seen: false, subaddr_index: { major: 0n, minor: 1n }, type: 'pool' });
  });

  it('gives fractions and exponents as numbers, and everything else as JSON.parse does', () => {
    expect(parseWalletJson('[1.5, -2e3, 0, -0, -7, true, false, null, "a\\u00e9\\n\\"b\\\\", {}, []]')).toEqual([1.5, -2000, 0n, 0n, -7n, true, false, null, 'aé\n"b\\', {}, []]);
  });

  it('keeps a "__proto__" key as data', () => {
    const parsed = parseWalletJson('{"__proto__":{"polluted":1}}') as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses what is not JSON', () => {
    for (const bad of ['', '{', '{"a":1,}', '[1,]', '01', '1.', '.5', '-', '+1', 'tru', '"a', '"\u0001"', '{"a" 1}', '1 2', 'NaN', "'a'", '"\\x"'])
      expect(() => parseWalletJson(bad), bad).toThrow(WalletJsonError);
  });

  it('refuses nesting past 64 levels instead of overflowing the stack', () => {
    expect(() => parseWalletJson('['.repeat(100_000) + ']'.repeat(100_000))).toThrow(WalletJsonError);
    expect(parseWalletJson('['.repeat(60) + ']'.repeat(60))).toBeDefined();
  });

  it('writes bigints as JSON integers', () => {
    expect(stringifyWalletJson({ destinations: [{ amount: 18446744073709551615n, address: 'x' }], priority: 0, skip: undefined, do_not_relay: false })).toBe(
      '{"destinations":[{"amount":18446744073709551615,"address":"x"}],"priority":0,"do_not_relay":false}',
    );
    expect(() => stringifyWalletJson({ n: Number.NaN })).toThrow(TypeError);
  });

  // (Integral doubles past 2^53 are left out: JSON.stringify writes them shortened, which this parser reads exactly as written.)
  it('reads back what it writes, and what JSON.stringify writes, like JSON.parse except integers', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d) || Number.isSafeInteger(d)), fc.string(), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 })),
    })).value;
    const withBigInts = (value: unknown): unknown =>
      typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : Array.isArray(value) ? value.map(withBigInts) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withBigInts(v)])) : value;
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify(value);
        const parsed = parseWalletJson(text);
        expect(parsed).toEqual(withBigInts(JSON.parse(text)));
        expect(parseWalletJson(stringifyWalletJson(parsed))).toEqual(parsed);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), (n) => {
        expect(parseWalletJson(stringifyWalletJson({ n }))).toEqual({ n });
      }),
    );
  });
});
