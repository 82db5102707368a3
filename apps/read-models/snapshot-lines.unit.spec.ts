import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../test/support/temp-dirs.ts';
import { encodeSection, readSection } from './snapshot-lines.ts';

const tempDir = tempDirs('relay-snapshot-lines-');

/** Writes `bytes` after a prefix of 7 bytes and reads the section back through a buffer of `bufferBytes`. */
const roundTrip = (bytes: Buffer, bufferBytes = 64) => {
  const file = path.join(tempDir(), 'section');
  fs.writeFileSync(file, Buffer.concat([Buffer.from('prefix\n'), bytes, Buffer.from('after')]));
  const fd = fs.openSync(file, 'r');
  try {
    return readSection(fd, 7, bytes.length, Buffer.alloc(bufferBytes));
  } finally {
    fs.closeSync(fd);
  }
};

const entries = Array.from({ length: 3_000 }, (_, i) => ({ id: `app_${i}`, name: `App ${i} “Zoë” 🚀`, settings: { webhookUrl: null, n: i } }));

describe('snapshot sections as lines', () => {
  it('lay an array out in lines of about 16 KiB, and read it back equal', () => {
    const bytes = encodeSection(entries);
    const lines = bytes.toString('latin1').split('\n');
    expect(lines.at(-1)).toBe('');
    expect(JSON.parse(lines[0]!)).toEqual({ array: lines.length - 2 });
    expect(lines.length - 2).toBeGreaterThan(10);
    expect(Math.max(...lines.map((line) => Buffer.byteLength(line)))).toBeLessThan(24 * 1024);
    expect(roundTrip(bytes)).toEqual({ value: entries });
  });

  it('read back an object whose arrays are laid out in lines, its other properties and an empty array with it', () => {
    const value = { users: entries, sessions: [['s1', { userId: 'u1' }]], contacts: [], clock: '2026-11-30T00:00:00.000Z', nested: { a: [1, 2] } };
    expect(roundTrip(encodeSection(value))).toEqual({ value });
  });

  it('read back a value that is neither an array nor an object', () => {
    expect(roundTrip(encodeSection(null))).toEqual({ value: null });
    expect(roundTrip(encodeSection('…'))).toEqual({ value: '…' });
  });

  it('read a line longer than its buffer (one entry of 100 KB)', () => {
    const large = [{ members: 'x'.repeat(100_000) }, { members: 'y' }];
    expect(roundTrip(encodeSection(large), 16)).toEqual({ value: large });
  });

  it('refuse a section cut short', () => {
    const bytes = encodeSection(entries);
    expect(roundTrip(bytes.subarray(0, bytes.length - 1))).toBeUndefined();
    expect(roundTrip(bytes.subarray(0, bytes.length >> 1))).toBeUndefined();
  });
});
