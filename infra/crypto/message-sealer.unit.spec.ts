import { describe, expect, it } from 'vitest';
import { createMessageSealer, jsonOf, SealedPayloadError } from './message-sealer.ts';
import { createSecretBox } from './secret-box.ts';

const sealer = createMessageSealer(createSecretBox('11'.repeat(32)));

describe('message sealer', () => {
  it('seals and opens a payload with a data key; the key travels wrapped only', () => {
    const key = sealer.newKey();
    expect(key.raw).toHaveLength(32);
    expect(key.wrapped).not.toContain(key.raw.toString('base64url'));
    const sealed = sealer.seal(key.raw, 'inbound-m1', { c: '+15550001', t: 'hello 😀\u0000' });
    expect(sealed).toMatch(/^s1:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('hello');
    expect(sealer.open(sealer.unwrap(key.wrapped), 'inbound-m1', sealed)).toEqual({ format: 'json', value: { c: '+15550001', t: 'hello 😀\u0000' } });
  });

  it('seals and opens a list of strings (format s2), nulls and empty strings included', () => {
    const key = sealer.newKey();
    const strings = ['+15550001', 'hello 😀\u0000', null, '', 'ü'.repeat(5000)];
    const sealed = sealer.sealStrings(key.raw, 'sendbatch-b1/k1', strings);
    expect(sealed).toMatch(/^s2:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('hello');
    expect(sealer.open(key.raw, 'sendbatch-b1/k1', sealed)).toEqual({ format: 'strings', strings });
    expect(() => sealer.open(key.raw, 'sendbatch-b2/k1', sealed)).toThrow(SealedPayloadError);
    // The format is authenticated too: the same bytes under the other prefix do not open.
    expect(() => sealer.open(key.raw, 'sendbatch-b1/k1', `s1:${sealed.slice(3)}`)).toThrow(SealedPayloadError);
    expect(() => jsonOf(sealer.open(key.raw, 'sendbatch-b1/k1', sealed))).toThrow(SealedPayloadError);
  });

  it('a payload does not open with another key, for another message, or altered', () => {
    const key = sealer.newKey();
    const sealed = sealer.seal(key.raw, 'inbound-m1', { t: 'x' });
    expect(() => sealer.open(sealer.newKey().raw, 'inbound-m1', sealed)).toThrow(SealedPayloadError);
    expect(() => sealer.open(key.raw, 'inbound-m2', sealed)).toThrow(SealedPayloadError);
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === 'A' ? 'B' : 'A') + sealed.at(-1);
    expect(() => sealer.open(key.raw, 'inbound-m1', flipped)).toThrow(SealedPayloadError);
  });

  it('a key wrapped under another secret key does not unwrap', () => {
    const other = createMessageSealer(createSecretBox('22'.repeat(32)));
    expect(() => sealer.unwrap(other.newKey().wrapped)).toThrow(SealedPayloadError);
  });
});
