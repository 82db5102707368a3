/**
 * The test client's own protobuf (proto2) reading and writing: no generated code, no protobuf
 * library. Two levels:
 *
 * - `readFields` lists a message's fields as they are on the wire (number, wire type, value, in
 *   order), for specs that check layouts field by field;
 * - `encode`/`decode` turn plain objects into bytes and back by a message table (./schema.ts),
 *   writing fields in field-number order (as protoc's C++ code and protobufjs's encoder do),
 *   refusing to write a message whose proto2 `required` fields are missing, and refusing to read
 *   one (as the C++ lite runtime's ParseFromArray, which libsession uses, does).
 */
import { SCHEMA, type FieldSpec, type MessageName } from './schema.ts';

export type WireType = 0 | 1 | 2 | 5;

export interface WireField {
  readonly no: number;
  readonly wireType: WireType;
  /** Varints as bigint; fixed64/fixed32 and length-delimited values as the raw bytes. */
  readonly value: bigint | Buffer;
}

export function varint(value: number | bigint): Buffer {
  let v = BigInt(value);
  if (v < 0n) v += 1n << 64n; // negative int32/int64 take ten bytes, as in every protobuf runtime
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

export const tag = (no: number, wireType: WireType): Buffer => varint((no << 3) | wireType);
export const lengthDelimited = (no: number, bytes: Buffer): Buffer => Buffer.concat([tag(no, 2), varint(bytes.length), bytes]);
export const varintField = (no: number, value: number | bigint): Buffer => Buffer.concat([tag(no, 0), varint(value)]);

/** The fields of one message, in wire order. Throws on truncation or an unsupported wire type. */
export function readFields(bytes: Buffer): WireField[] {
  const fields: WireField[] = [];
  let i = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[i++];
      if (b === undefined) throw new Error('truncated varint');
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
      if (shift > 63n) throw new Error('varint too long');
    }
  };
  const take = (n: number): Buffer => {
    if (i + n > bytes.length) throw new Error('truncated field');
    const value = bytes.subarray(i, i + n);
    i += n;
    return value;
  };
  while (i < bytes.length) {
    const key = Number(readVarint());
    const no = key >>> 3;
    const wireType = key & 7;
    if (no === 0) throw new Error('field number 0');
    if (wireType === 0) fields.push({ no, wireType, value: readVarint() });
    else if (wireType === 1) fields.push({ no, wireType, value: take(8) });
    else if (wireType === 2) fields.push({ no, wireType, value: take(Number(readVarint())) });
    else if (wireType === 5) fields.push({ no, wireType, value: take(4) });
    else throw new Error(`unsupported wire type ${wireType}`);
  }
  return fields;
}

// ---------------------------------------------------------------------------------------------
// Table-driven encode/decode.

export type ProtoValue = number | bigint | boolean | string | Buffer | ProtoObject | ProtoValue[];
export interface ProtoObject {
  [name: string]: ProtoValue | undefined;
}

const SCALAR_WIRE: Record<string, WireType> = { uint64: 0, uint32: 0, int64: 0, bool: 0, enum: 0, fixed64: 1, string: 2, bytes: 2 };

const isMessageType = (type: string): type is MessageName => type in SCHEMA;

function encodeScalar(spec: FieldSpec, value: ProtoValue): Buffer {
  switch (spec.type) {
    case 'uint64':
    case 'uint32':
    case 'int64':
    case 'enum':
      return varintField(spec.no, value as number | bigint);
    case 'bool':
      return varintField(spec.no, value ? 1 : 0);
    case 'fixed64': {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(BigInt(value as number | bigint));
      return Buffer.concat([tag(spec.no, 1), b]);
    }
    case 'string':
      return lengthDelimited(spec.no, Buffer.from(value as string, 'utf8'));
    case 'bytes':
      return lengthDelimited(spec.no, value as Buffer);
    default:
      return lengthDelimited(spec.no, encode(spec.type as MessageName, value as ProtoObject));
  }
}

/**
 * Writes `object` as message `type`: known fields only (an unknown key throws, to catch typos),
 * in field-number order; proto2 repeated scalars unpacked (the proto2 default). An explicitly set
 * empty string or 0 is written (proto2 has presence); `undefined` is not.
 */
export function encode(type: MessageName, object: ProtoObject): Buffer {
  const specs = [...SCHEMA[type]].sort((a, b) => a.no - b.no);
  for (const key of Object.keys(object)) {
    if (!specs.some((s) => s.name === key)) throw new Error(`${type} has no field ${key}`);
  }
  const parts: Buffer[] = [];
  for (const spec of specs) {
    const value = object[spec.name];
    if (value === undefined) {
      if (spec.rule === 'required') throw new Error(`${type}.${spec.name} is required (proto2) and missing`);
      continue;
    }
    const values = spec.rule === 'repeated' ? (value as ProtoValue[]) : [value];
    for (const v of values) parts.push(encodeScalar(spec, v));
  }
  return Buffer.concat(parts);
}

function decodeScalar(spec: FieldSpec, field: WireField): ProtoValue {
  const raw = field.value;
  switch (spec.type) {
    case 'uint64':
    case 'int64':
      return Number(raw as bigint);
    case 'uint32':
    case 'enum':
      return Number(BigInt.asUintN(32, raw as bigint));
    case 'bool':
      return (raw as bigint) !== 0n;
    case 'fixed64':
      return (raw as Buffer).readBigUInt64LE();
    case 'string':
      return (raw as Buffer).toString('utf8');
    case 'bytes':
      return Buffer.from(raw as Buffer);
    default:
      return decode(spec.type as MessageName, raw as Buffer);
  }
}

/** Unpacks a packed repeated varint field (parsers accept packed and unpacked alike). */
function unpack(field: WireField): WireField[] {
  return readFieldsOfPacked(field.value as Buffer).map((value) => ({ no: field.no, wireType: 0, value }));
}

function readFieldsOfPacked(bytes: Buffer): bigint[] {
  const out: bigint[] = [];
  let i = 0;
  while (i < bytes.length) {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[i++];
      if (b === undefined) throw new Error('truncated packed varint');
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
      shift += 7n;
    }
    out.push(result);
  }
  return out;
}

/**
 * Reads `bytes` as message `type`. Unknown fields are skipped (as every protobuf runtime does);
 * a known field with the wrong wire type, or a missing proto2 `required` field anywhere in the
 * tree, throws (the C++ runtime reports the latter as a failed parse).
 */
export function decode(type: MessageName, bytes: Buffer): ProtoObject {
  const result: ProtoObject = {};
  for (let field of readFields(bytes)) {
    const spec = SCHEMA[type].find((s) => s.no === field.no);
    if (!spec) continue;
    const expected = isMessageType(spec.type) ? 2 : SCALAR_WIRE[spec.type];
    const fields = spec.rule === 'repeated' && expected === 0 && field.wireType === 2 ? unpack(field) : [field];
    for (field of fields) {
      if (field.wireType !== expected) throw new Error(`${type}.${spec.name} has wire type ${field.wireType}, not ${expected}`);
      const value = decodeScalar(spec, field);
      if (spec.rule === 'repeated') result[spec.name] = [...((result[spec.name] as ProtoValue[] | undefined) ?? []), value];
      else if (isMessageType(spec.type) && result[spec.name] !== undefined) {
        // A repeated occurrence of a singular message field merges into it (protobuf rules).
        result[spec.name] = { ...(result[spec.name] as ProtoObject), ...(value as ProtoObject) };
      } else result[spec.name] = value; // last one wins for singular scalars
    }
  }
  for (const spec of SCHEMA[type]) {
    if (spec.rule === 'required' && result[spec.name] === undefined) throw new Error(`${type}.${spec.name} is required (proto2) and missing`);
  }
  return result;
}
