import { MNEMONIC_WORDS } from './mnemonic-words.ts';

/**
 * Session's recovery phrase: the 16-byte seed as 13 words, 12 that carry it and a checksum word.
 * Each 4 bytes of the seed, read as a little-endian 32-bit number x, become three words
 * w1 = x mod n, w2 = (⌊x/n⌋ + w1) mod n, w3 = (⌊x/n²⌋ + w2) mod n, with n = 1626 words; the
 * checksum word repeats the word at index crc32(first three letters of the 12 words) mod 12. Words
 * are recognised by their first three letters, as Session's apps do.
 */
export class MnemonicError extends Error {
  override readonly name = 'MnemonicError';
}

const N = MNEMONIC_WORDS.length;
const PREFIX = 3;
const SEED_BYTES = 16;
const byPrefix = new Map(MNEMONIC_WORDS.map((word, index) => [word.slice(0, PREFIX), index]));

export function seedToMnemonic(seed: Uint8Array): string {
  if (seed.byteLength !== SEED_BYTES) throw new MnemonicError(`a Session seed is ${SEED_BYTES} bytes, not ${seed.byteLength}`);
  const view = new DataView(seed.buffer, seed.byteOffset, seed.byteLength);
  const words: string[] = [];
  for (let offset = 0; offset < SEED_BYTES; offset += 4) {
    const x = view.getUint32(offset, true);
    const w1 = x % N;
    const w2 = (Math.floor(x / N) + w1) % N;
    const w3 = (Math.floor(x / N / N) + w2) % N;
    words.push(word(w1), word(w2), word(w3));
  }
  words.push(words[checksumIndex(words)]!);
  return words.join(' ');
}

export function mnemonicToSeed(phrase: string): Buffer {
  const words = phrase.trim().toLowerCase().split(/\s+/);
  if (words.length !== 13) throw new MnemonicError(`a Session recovery phrase has 13 words, not ${words.length}`);
  const data = words.slice(0, 12);
  const indexes = data.map((w) => {
    const index = byPrefix.get(w.slice(0, PREFIX));
    if (index === undefined || w.length < PREFIX) throw new MnemonicError('the recovery phrase has a word that is not in the word list');
    return index;
  });
  const seed = Buffer.alloc(SEED_BYTES);
  for (let group = 0; group < 4; group++) {
    const [w1, w2, w3] = [indexes[group * 3]!, indexes[group * 3 + 1]!, indexes[group * 3 + 2]!];
    const x = w1 + N * ((N - w1 + w2) % N) + N * N * ((N - w2 + w3) % N);
    // Three words can name numbers up to n³ > 2³²: those name no seed.
    if (x > 0xffffffff) throw new MnemonicError('the recovery phrase does not encode a seed');
    seed.writeUInt32LE(x, group * 4);
  }
  const expected = data[checksumIndex(data)]!;
  if (expected.slice(0, PREFIX) !== words[12]!.slice(0, PREFIX)) throw new MnemonicError('the checksum word of the recovery phrase does not match');
  return seed;
}

function word(index: number): string {
  return MNEMONIC_WORDS[index]!;
}

function checksumIndex(words: readonly string[]): number {
  const prefixes = words.map((w) => w.slice(0, PREFIX)).join('');
  return crc32(Buffer.from(prefixes, 'utf8')) % words.length;
}

let crcTable: Uint32Array | undefined;

/** CRC-32 as zlib computes it (reflected, polynomial 0xEDB88320). */
export function crc32(bytes: Uint8Array): number {
  crcTable ??= buildCrcTable();
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (crc >>> 8) ^ crcTable[(crc ^ byte) & 0xff]!;
  return (crc ^ 0xffffffff) >>> 0;
}

function buildCrcTable(): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}
