import { describe, expect, it } from 'vitest';
import { sealLegacyJson } from '../../test/support/legacy-seal.ts';
import { createMessageSealer, SealedPayloadError } from './message-sealer.ts';
import { createSecretBox } from './secret-box.ts';

const sealer = createMessageSealer(createSecretBox('11'.repeat(32)));

describe('message sealer', () => {
  it('seals and opens a list of strings (format s2) with a data key, nulls, empty and long strings included; the key travels wrapped only', () => {
    const key = sealer.newKey();
    expect(key.raw).toHaveLength(32);
    expect(key.wrapped).not.toContain(key.raw.toString('base64url'));
    const strings = ['+15550001', 'hello 😀\u0000', null, '', 'ü'.repeat(5000)];
    const sealed = sealer.seal(key.raw, 'sendbatch-b1/k1', strings);
    expect(sealed).toMatch(/^s2:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('hello');
    expect(sealer.open(sealer.unwrap(key.wrapped), 'sendbatch-b1/k1', sealed)).toEqual({ format: 'strings', strings });
  });

  it('a payload does not open with another key, for another message, altered, or under another format', () => {
    const key = sealer.newKey();
    const sealed = sealer.seal(key.raw, 'inbound-m1', ['x']);
    expect(() => sealer.open(sealer.newKey().raw, 'inbound-m1', sealed)).toThrow(SealedPayloadError);
    expect(() => sealer.open(key.raw, 'inbound-m2', sealed)).toThrow(SealedPayloadError);
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === 'A' ? 'B' : 'A') + sealed.at(-1);
    expect(() => sealer.open(key.raw, 'inbound-m1', flipped)).toThrow(SealedPayloadError);
    expect(() => sealer.open(key.raw, 'inbound-m1', `s1:${sealed.slice(3)}`)).toThrow(SealedPayloadError);
    expect(() => sealer.open(key.raw, 'inbound-m1', `s9:${sealed.slice(3)}`)).toThrow('Unknown sealed payload format');
  });

  it('opens the JSON payloads (format s1) of histories written before s2', () => {
    const key = sealer.newKey();
    const sealed = sealLegacyJson(key.raw, 'inbound-m1', { c: '+15550001', t: 'hello 😀\u0000' });
    expect(sealer.open(key.raw, 'inbound-m1', sealed)).toEqual({ format: 'json', value: { c: '+15550001', t: 'hello 😀\u0000' } });
    expect(() => sealer.open(key.raw, 'inbound-m2', sealed)).toThrow(SealedPayloadError);
    expect(() => sealer.open(sealer.newKey().raw, 'inbound-m1', sealed)).toThrow(SealedPayloadError);
  });

  it('a key wrapped under another secret key does not unwrap', () => {
    const other = createMessageSealer(createSecretBox('22'.repeat(32)));
    expect(() => sealer.unwrap(other.newKey().wrapped)).toThrow(SealedPayloadError);
  });
});
