import fs from 'node:fs';

/**
 * How one read model's snapshot is laid out in its section of the snapshot file (format 5): lines
 * of JSON, none much longer than `LINE_BYTES` but for a single longer entry, so that a reader decodes
 * and parses them one at a time from a small reused buffer.
 *
 * Issue 49, session 41: one JSON text per model meant strings of up to 26 MB at 10,000 users, each
 * copied into memory the process had never touched: on this VM every 4 KiB page of it cost a fault
 * of ~12 µs, and the copies took longer than the parse. Lines of ~16 KiB are decoded into V8's young
 * generation, whose pages are reused.
 *
 * The first line is the skeleton: `{"array":n}` for an array (its entries in the next n lines, each
 * line an array of consecutive entries); `{"object":{...},"arrays":[[key,n],...]}` for an object
 * whose array-valued properties are laid out the same way, in that order (its other properties are
 * in `object`); `{"value":...}` for anything else. UTF-8, as JSON.stringify writes it.
 */
const LINE_BYTES = 16 * 1024;

type Skeleton = { array: number } | { object: Record<string, unknown>; arrays: [string, number][] } | { value: unknown };

/**
 * Appends the lines of an array's entries to `lines`, and says how many: each line the JSON of a
 * run of consecutive entries, the run's length adjusted from line to line to come near LINE_BYTES
 * (one JSON.stringify a line, not one an entry).
 */
const entryLines = (entries: readonly unknown[], lines: string[]): number => {
  const before = lines.length;
  let run = 16;
  for (let i = 0; i < entries.length; ) {
    const line = JSON.stringify(entries.slice(i, i + run));
    lines.push(line);
    i += run;
    run = Math.max(1, Math.round((run * LINE_BYTES) / line.length));
  }
  return lines.length - before;
};

/** A model's snapshot as the bytes of its section. */
export const encodeSection = (value: unknown): Buffer => {
  let skeleton: Skeleton;
  const lines: string[] = [];
  if (Array.isArray(value)) {
    skeleton = { array: entryLines(value, lines) };
  } else if (value !== null && typeof value === 'object') {
    const object: Record<string, unknown> = {};
    const arrays: [string, number][] = [];
    for (const [key, property] of Object.entries(value)) {
      if (!Array.isArray(property)) {
        object[key] = property;
        continue;
      }
      arrays.push([key, entryLines(property, lines)]);
    }
    skeleton = { object, arrays };
  } else skeleton = { value };
  lines.unshift(JSON.stringify(skeleton));
  lines.push('');
  return Buffer.from(lines.join('\n'));
};

/**
 * Reads a section's lines from `fd` (the section's `length` bytes at `position`) through `buffer`,
 * one line at a time; the buffer grows only for a line longer than it. Undefined if the section
 * ends before its last line does.
 */
class SectionLines {
  private start = 0;
  private end = 0;
  private read = 0;

  constructor(
    private readonly fd: number,
    private readonly position: number,
    private readonly length: number,
    private buffer: Buffer,
  ) {}

  next(): string | undefined {
    for (;;) {
      const newline = this.buffer.indexOf(0x0a, this.start);
      if (newline >= 0 && newline < this.end) {
        const line = this.buffer.toString('utf8', this.start, newline);
        this.start = newline + 1;
        return line;
      }
      if (this.read === this.length) return undefined;
      // Keep the part of a line already read at the front, then fill the rest.
      this.buffer.copy(this.buffer, 0, this.start, this.end);
      this.end -= this.start;
      this.start = 0;
      if (this.end === this.buffer.length) {
        const larger = Buffer.allocUnsafe(this.buffer.length * 2);
        this.buffer.copy(larger, 0, 0, this.end);
        this.buffer = larger;
      }
      const n = fs.readSync(this.fd, this.buffer, this.end, Math.min(this.buffer.length - this.end, this.length - this.read), this.position + this.read);
      if (n === 0) return undefined; // the file was cut short
      this.end += n;
      this.read += n;
    }
  }
}

/** The entries of an array laid out in the next `count` lines, or undefined if a line is missing. */
const readEntries = (lines: SectionLines, count: number): unknown[] | undefined => {
  const entries: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const line = lines.next();
    if (line === undefined) return undefined;
    for (const entry of JSON.parse(line) as unknown[]) entries.push(entry);
  }
  return entries;
};

/** Reads back a value encodeSection wrote, from its section in an open file; undefined if cut short. */
export const readSection = (fd: number, position: number, length: number, buffer: Buffer): { value: unknown } | undefined => {
  const lines = new SectionLines(fd, position, length, buffer);
  const first = lines.next();
  if (first === undefined) return undefined;
  const skeleton = JSON.parse(first) as Skeleton;
  if ('array' in skeleton) {
    const entries = readEntries(lines, skeleton.array);
    return entries && { value: entries };
  }
  if ('object' in skeleton) {
    const object = skeleton.object;
    for (const [key, count] of skeleton.arrays) {
      const entries = readEntries(lines, count);
      if (!entries) return undefined;
      object[key] = entries;
    }
    return { value: object };
  }
  return { value: skeleton.value };
};
