import { describe, expect, it } from 'vitest';
import { identityFromSeed, isSessionId, newSeed, seedFromHex, sessionIdOfEdKey, sessionIdPublicKey } from './identity.ts';
import { crc32, MnemonicError, mnemonicToSeed, seedToMnemonic } from './mnemonic.ts';
import { MNEMONIC_WORDS } from './mnemonic-words.ts';

// Public vectors (docs: ../shared/notes/session-protocol.md §2): sessionjs/keypair tests/index.test.ts,
// sessionjs/client test/mnemonic.test.ts and test/keypair.test.ts.
const SEED_1 = {
  seed: '39038c8988db02c1af44e8c847bd9713',
  sessionId: '054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69',
  xSecret: '38826f05b06ae13d8e9fa7ebc694410979339df07731e6300128dab10ccd9d7b',
  edPublic: 'f661a69453ef81a3b75bfcf954eb1f439d4d74edcab0e72a5c435ee418a907be',
  mnemonic: 'puffin luxury annoyed rustled memoir faxed smidgen puddle kiwi nylon utopia zinger kiwi',
};
const SEED_2 = {
  seed: '8c0d6b3ad3d2d5c7c252d3816ba7f267',
  sessionId: '05276137de3e4be913e0d30de7d59428446033a978893e788e91e4f2ddc02bd378',
  xSecret: 'e89642bff0068aa119183fc4bec493cb5173643a2c4ed01187953641c7f13f61',
  edPublic: '62267776b50f7a12376fb91647c296d8b9cd0b24743ec0b97f530b3907518ec3',
};

describe('Session identity from a seed', () => {
  it.each([SEED_1, SEED_2])('seed $seed gives the published keys and Session ID', (vector) => {
    const identity = identityFromSeed(seedFromHex(vector.seed));
    expect(identity.sessionId).toBe(vector.sessionId);
    expect(identity.xSecretKey.toString('hex')).toBe(vector.xSecret);
    expect(identity.edPublicKey.toString('hex')).toBe(vector.edPublic);
    expect(identity.edSecretKey.toString('hex')).toBe(vector.seed + '0'.repeat(32) + vector.edPublic);
    expect(sessionIdOfEdKey(identity.edPublicKey)).toBe(vector.sessionId);
  });

  it.each([
    ['session', '0512742fb4ac033a8a33f5776aa0e7e88f35f7af9f65dee31e57fbc7d6f8664b12'],
    ['love', '053db493811f729da20289e31498b8fe2b28edc90358cd3ec11a6b12ac1b9fb818'],
  ])('the phrase "%s" thirteen times gives the published Session ID', (word, sessionId) => {
    const seed = mnemonicToSeed(Array(13).fill(word).join(' '));
    expect(identityFromSeed(seed).sessionId).toBe(sessionId);
  });

  it('reads and checks Session IDs', () => {
    expect(isSessionId(SEED_1.sessionId)).toBe(true);
    expect(isSessionId('15' + SEED_1.sessionId.slice(2))).toBe(false);
    expect(isSessionId(SEED_1.sessionId.toUpperCase())).toBe(false);
    expect(isSessionId(SEED_1.sessionId.slice(0, 65))).toBe(false);
    expect(sessionIdPublicKey(SEED_1.sessionId).toString('hex')).toBe(SEED_1.sessionId.slice(2));
    expect(() => sessionIdPublicKey('05zz')).toThrow();
    expect(() => seedFromHex('abc')).toThrow();
    expect(() => identityFromSeed(Buffer.alloc(32))).toThrow();
  });

  it('makes a fresh random seed each time', () => {
    const a = newSeed();
    expect(a.byteLength).toBe(16);
    expect(a.equals(newSeed())).toBe(false);
  });
});

describe('Session recovery phrase', () => {
  it('has the 1626-word list whose three-letter prefixes are unique', () => {
    expect(MNEMONIC_WORDS).toHaveLength(1626);
    expect(new Set(MNEMONIC_WORDS.map((w) => w.slice(0, 3))).size).toBe(1626);
    expect(MNEMONIC_WORDS.slice(0, 3)).toEqual(['abbey', 'abducts', 'ability']);
  });

  it('exports and imports the published phrase of a seed', () => {
    expect(seedToMnemonic(seedFromHex(SEED_1.seed))).toBe(SEED_1.mnemonic);
    expect(mnemonicToSeed(SEED_1.mnemonic).toString('hex')).toBe(SEED_1.seed);
  });

  it('reads words by their first three letters, in any case and spacing', () => {
    const short = SEED_1.mnemonic.split(' ').map((w) => w.slice(0, 3).toUpperCase()).join('   ');
    expect(mnemonicToSeed(`  ${short}\n`).toString('hex')).toBe(SEED_1.seed);
  });

  it('round-trips random seeds', () => {
    for (let i = 0; i < 200; i++) {
      const seed = newSeed();
      expect(mnemonicToSeed(seedToMnemonic(seed)).equals(seed)).toBe(true);
    }
  });

  it('refuses a wrong checksum word, an unknown word, a wrong length', () => {
    const words = SEED_1.mnemonic.split(' ');
    expect(() => mnemonicToSeed([...words.slice(0, 12), 'abbey'].join(' '))).toThrow(MnemonicError);
    expect(() => mnemonicToSeed(['qqqqq', ...words.slice(1)].join(' '))).toThrow(/not in the word list/);
    expect(() => mnemonicToSeed(words.slice(0, 12).join(' '))).toThrow(/13 words/);
  });

  it('refuses three words that name a number beyond 32 bits', () => {
    // x = w1 + n((n − w1 + w2) mod n) + n²((n − w2 + w3) mod n) is at its largest for zoom, abbey, zoom.
    const phrase = ['zoom', 'abbey', 'zoom', ...Array(9).fill('abbey')];
    const checksum = phrase[crc32(Buffer.from(phrase.map((w) => w.slice(0, 3)).join(''))) % 12]!;
    expect(() => mnemonicToSeed([...phrase, checksum].join(' '))).toThrow(/does not encode a seed/);
  });

  it('computes zlib CRC-32', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });
});
