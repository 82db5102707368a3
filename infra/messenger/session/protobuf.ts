/**
 * Just enough of the protobuf wire format for Session's few messages: varints (wire type 0) and
 * length-delimited fields (wire type 2) are written; every wire type but the deprecated groups is
 * read, and unknown fields are skipped, as protobuf readers do. Written from the format's
 * specification, not from any generated code.
 */
export class ProtobufError extends Error {
  override readonly name = 'ProtobufError';
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  varint(field: number, value: number | bigint): this {
    this.parts.push(encodeVarint(BigInt(field) << 3n | BigInt(VARINT)), encodeVarint(BigInt(value)));
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.parts.push(encodeVarint(BigInt(field) << 3n | BigInt(LENGTH_DELIMITED)), encodeVarint(BigInt(value.byteLength)), Buffer.from(value));
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value, 'utf8'));
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function encodeVarint(value: bigint): Buffer {
  if (value < 0n) throw new ProtobufError('negative values are not written by this codec');
  if (value >= 1n << 64n) throw new ProtobufError('a varint holds at most 64 bits');
  const bytes: number[] = [];
  let rest = value;
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    bytes.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return Buffer.from(bytes);
}

export type ProtoField =
  | { readonly field: number; readonly wireType: 0; readonly value: bigint }
  | { readonly field: number; readonly wireType: 2; readonly value: Buffer }
  | { readonly field: number; readonly wireType: 1 | 5; readonly value: Buffer };

/** The fields of one message, in order; throws ProtobufError on anything malformed. */
export function* readFields(buffer: Buffer): Generator<ProtoField> {
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (offset >= buffer.length) throw new ProtobufError('truncated varint');
      const byte = buffer[offset++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        if (result >= 1n << 64n) throw new ProtobufError('varint beyond 64 bits');
        return result;
      }
    }
    throw new ProtobufError('varint longer than 10 bytes');
  };
  const take = (length: number): Buffer => {
    if (length > buffer.length - offset) throw new ProtobufError('field runs past the end of the message');
    const slice = buffer.subarray(offset, offset + length);
    offset += length;
    return slice;
  };
  while (offset < buffer.length) {
    const key = varint();
    const field = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (field === 0) throw new ProtobufError('field number 0');
    switch (wireType) {
      case VARINT:
        yield { field, wireType: 0, value: varint() };
        break;
      case LENGTH_DELIMITED: {
        const length = varint();
        if (length > BigInt(buffer.length)) throw new ProtobufError('field runs past the end of the message');
        yield { field, wireType: 2, value: take(Number(length)) };
        break;
      }
      case FIXED64:
        yield { field, wireType: 1, value: take(8) };
        break;
      case FIXED32:
        yield { field, wireType: 5, value: take(4) };
        break;
      default:
        throw new ProtobufError(`unsupported wire type ${wireType}`);
    }
  }
}

/** A varint field's value as a JavaScript number; throws when it does not fit exactly. */
export function safeNumber(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ProtobufError(`${what} is too large`);
  return Number(value);
}
