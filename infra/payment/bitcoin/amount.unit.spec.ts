import { describe, expect, it } from 'vitest';
import { atomicOfDecimal, bip21PaymentUri, decimalOfAtomic, uriSchemeOf } from './amount.ts';
import { atomicAmountOf, parseRpcJson } from './bitcoin-json.ts';

describe('Bitcoin-family amounts', () => {
  it('reads decimals of the coin into atomic units exactly', () => {
    expect(atomicOfDecimal('0.03333334')).toBe(3_333_334n);
    expect(atomicOfDecimal('0.1')).toBe(10_000_000n);
    expect(atomicOfDecimal('0.30000000')).toBe(30_000_000n);
    expect(atomicOfDecimal('21')).toBe(2_100_000_000n);
    expect(atomicOfDecimal('0.00000001')).toBe(1n);
    expect(atomicOfDecimal('0')).toBe(0n);
    expect(atomicOfDecimal('-0.5')).toBe(-50_000_000n);
    expect(atomicOfDecimal('1.')).toBe(100_000_000n);
    // Past 2^53 litoshi, where a float would round.
    expect(atomicOfDecimal('84000000.12345679')).toBe(8_400_000_012_345_679n);
    expect(atomicOfDecimal('92233720368.54775807')).toBe(9_223_372_036_854_775_807n);
  });

  it('reads exponents, and zeros past the eighth decimal', () => {
    expect(atomicOfDecimal('1e-8')).toBe(1n);
    expect(atomicOfDecimal('1.5E2')).toBe(15_000_000_000n);
    expect(atomicOfDecimal('0.123456780000')).toBe(12_345_678n);
    expect(atomicOfDecimal('100e-10')).toBe(1n);
    expect(atomicOfDecimal('0.0000000100')).toBe(1n);
  });

  it('refuses what is finer than one atomic unit, or is not a number', () => {
    expect(() => atomicOfDecimal('0.000000001')).toThrow(RangeError);
    expect(() => atomicOfDecimal('1e-9')).toThrow(RangeError);
    for (const text of ['', 'abc', '1,5', '0x10', '1.2.3', 'NaN', 'Infinity', '1e99999999']) expect(() => atomicOfDecimal(text)).toThrow(RangeError);
  });

  it('writes atomic units as decimals of the coin', () => {
    expect(decimalOfAtomic(3_333_334n)).toBe('0.03333334');
    expect(decimalOfAtomic(150_000_000n)).toBe('1.5');
    expect(decimalOfAtomic(100_000_000n)).toBe('1');
    expect(decimalOfAtomic(1n)).toBe('0.00000001');
    expect(decimalOfAtomic(0n)).toBe('0');
    expect(decimalOfAtomic(-50_000_000n)).toBe('-0.5');
    expect(decimalOfAtomic(9_223_372_036_854_775_807n)).toBe('92233720368.54775807');
    for (const atomic of [1n, 7n, 99_999_999n, 100_000_001n, 2_099_999_997_690_000n]) expect(atomicOfDecimal(decimalOfAtomic(atomic))).toBe(atomic);
  });

  it('reads the amounts of an RPC answer from their text, never through a float', () => {
    const answer = parseRpcJson('{"amount":0.03333334,"big":92233720368.54775807,"fine":0.000000001,"text":"1"}') as Record<string, never>;
    expect(atomicAmountOf(answer.amount)).toBe(3_333_334n);
    expect(atomicAmountOf(answer.big)).toBe(9_223_372_036_854_775_807n);
    expect(atomicAmountOf(answer.fine)).toBeUndefined();
    expect(atomicAmountOf(answer.text)).toBeUndefined();
  });

  it('makes BIP21 payment URIs', () => {
    expect(uriSchemeOf('LTC')).toBe('litecoin');
    expect(uriSchemeOf('BTC')).toBe('bitcoin');
    expect(uriSchemeOf('DOGE')).toBe('doge');
    expect(bip21PaymentUri('litecoin', 'rltc1qxyz', 150_000_001n, 'Relay invoice inv_1 & co')).toBe('litecoin:rltc1qxyz?amount=1.50000001&label=Relay%20invoice%20inv_1%20%26%20co');
    expect(bip21PaymentUri('bitcoin', 'bc1qxyz', 100_000_000n, '')).toBe('bitcoin:bc1qxyz?amount=1');
    expect(() => bip21PaymentUri('bitcoin', 'bc1qxyz', 0n, '')).toThrow(RangeError);
  });
});
