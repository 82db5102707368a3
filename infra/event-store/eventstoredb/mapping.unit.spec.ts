import { describe, expect, it } from 'vitest';
import {
  RECORDED_AT_KEY,
  TAGS_KEY,
  currentTags,
  decodeMetadata,
  eventBytes,
  encodeMetadata,
  escapeRegex,
  isDataEvent,
  matchesFilter,
  parsePosition,
  satisfiesExpected,
  serverFilterOf,
  streamNames,
  toCommitPosition,
  toExpectedRevision,
  toGlobalPosition,
  toRecordedEvent,
  validateEventId,
  validateNamespace,
  validateStreamName,
  versionOfRevision,
  type EsdbRecordedEvent,
} from './mapping.ts';

describe('EventStoreDB mapping: versions and revisions', () => {
  it('maps expected versions to expected revisions (version v is revision v-1)', () => {
    expect(toExpectedRevision('any')).toBe('any');
    expect(toExpectedRevision('no_stream')).toBe('no_stream');
    expect(toExpectedRevision('stream_exists')).toBe('stream_exists');
    expect(toExpectedRevision(0n)).toBe('no_stream');
    expect(toExpectedRevision(1n)).toBe(0n);
    expect(toExpectedRevision(2n ** 60n)).toBe(2n ** 60n - 1n);
    expect(() => toExpectedRevision(-1n)).toThrow(RangeError);
    expect(() => toExpectedRevision(3 as unknown as bigint)).toThrow(RangeError);
  });

  it('maps the current revision of a conflict to the actual version', () => {
    expect(versionOfRevision('no_stream')).toBe(0n);
    expect(versionOfRevision(undefined)).toBe(0n);
    expect(versionOfRevision(-1n)).toBe(0n);
    expect(versionOfRevision(0n)).toBe(1n);
    expect(versionOfRevision(41n)).toBe(42n);
  });

  it('checks an expected version against a stream version (appends of no events)', () => {
    expect(satisfiesExpected('any', 0n)).toBe(true);
    expect(satisfiesExpected('any', 5n)).toBe(true);
    expect(satisfiesExpected('no_stream', 0n)).toBe(true);
    expect(satisfiesExpected('no_stream', 1n)).toBe(false);
    expect(satisfiesExpected(0n, 0n)).toBe(true);
    expect(satisfiesExpected(0n, 2n)).toBe(false);
    expect(satisfiesExpected('stream_exists', 0n)).toBe(false);
    expect(satisfiesExpected('stream_exists', 1n)).toBe(true);
    expect(satisfiesExpected(2n, 2n)).toBe(true);
    expect(satisfiesExpected(3n, 2n)).toBe(false);
  });
});

describe('EventStoreDB mapping: positions', () => {
  it('offsets commit positions by the origin so that the first event is at 1n', () => {
    const firstCommit = 4_711_234n;
    const origin = firstCommit - 1n;
    expect(toGlobalPosition(firstCommit, origin)).toBe(1n);
    expect(toGlobalPosition(firstCommit + 250n, origin)).toBe(251n);
    expect(toCommitPosition(0n, origin)).toBe(origin);
    expect(toCommitPosition(251n, origin)).toBe(firstCommit + 250n);
    const big = 2n ** 62n + 7n;
    expect(toCommitPosition(toGlobalPosition(big, origin), origin)).toBe(big);
  });

  it('parses stored positions strictly', () => {
    expect(parsePosition('0')).toBe(0n);
    expect(parsePosition(String(2n ** 60n))).toBe(2n ** 60n);
    for (const bad of ['', '-1', '01', '1.5', ' 1', 12, null, undefined, '1e3']) expect(parsePosition(bad)).toBeUndefined();
  });
});

describe('EventStoreDB mapping: namespaces and stream names', () => {
  it('accepts an empty namespace, or letters and digits ending in one separator', () => {
    for (const ok of ['', 'relay_', 'r1a2b3_', 'prod.', 'tenant42:']) expect(validateNamespace(ok)).toBe(ok);
    for (const bad of ['relay', '_', 'relay__', 're-lay_', '$relay_', 'relay_prod_', 'a'.repeat(64) + '_', 'é_']) {
      expect(() => validateNamespace(bad)).toThrow(RangeError);
    }
  });

  it('prefixes stream names and strips the prefix, hiding system, reserved and foreign streams', () => {
    const names = streamNames('r1_');
    expect(names.qualify('order-1')).toBe('r1_order-1');
    expect(names.unqualify('r1_order-1')).toBe('order-1');
    expect(names.unqualify('r1_nodash')).toBe('nodash');
    expect(names.unqualify('r2_order-1')).toBeUndefined();
    expect(names.unqualify('r12_order-1')).toBeUndefined();
    expect(names.unqualify('order-1')).toBeUndefined();
    expect(names.unqualify('$$r1_order-1')).toBeUndefined();
    expect(names.unqualify('r1_@relay-checkpoint-publisher')).toBeUndefined();
    expect(names.unqualify('r1_@relay-origin')).toBeUndefined();
    expect(names.unqualify('r1_')).toBeUndefined();
    const whole = streamNames('');
    expect(whole.unqualify('order-1')).toBe('order-1');
    expect(whole.unqualify('$stats-127.0.0.1:2113')).toBeUndefined();
    expect(whole.unqualify('@relay-checkpoints')).toBeUndefined();
  });

  it('tells data events from system events', () => {
    const names = streamNames('r1_');
    expect(isDataEvent(names, 'r1_order-1', 'OrderPlaced')).toBe(true);
    expect(isDataEvent(names, 'r1_order-1', '$streamDeleted')).toBe(false);
    expect(isDataEvent(names, '$et-OrderPlaced', '$>')).toBe(false);
    expect(isDataEvent(names, 'r2_order-1', 'OrderPlaced')).toBe(false);
  });

  it('refuses stream names callers may not use', () => {
    expect(validateStreamName('order-1')).toBe('order-1');
    for (const bad of ['', '$ce-order', '@relay-origin', '@relay-checkpoint-x']) expect(() => validateStreamName(bad)).toThrow(RangeError);
  });

  it('accepts only UUID event ids', () => {
    expect(validateEventId('0b7f5a0e-3f0e-4c59-9d8e-5c1d2b7a9f10')).toBe('0b7f5a0e-3f0e-4c59-9d8e-5c1d2b7a9f10');
    for (const bad of ['e-1', '', '0b7f5a0e3f0e4c599d8e5c1d2b7a9f10']) expect(() => validateEventId(bad)).toThrow(RangeError);
  });
});

describe('EventStoreDB mapping: filters', () => {
  const at = new Date('2024-05-01T10:00:00.000Z');
  const event = (streamName: string, type = 'T', recordedAt = at) => ({ streamName, type, recordedAt });

  it('matches categories (before the first dash), streams and types, all criteria together', () => {
    expect(matchesFilter(undefined, event('order-1'))).toBe(true);
    expect(matchesFilter({ categories: ['order'] }, event('order-3-gift'))).toBe(true);
    expect(matchesFilter({ categories: ['order'] }, event('orders-1'))).toBe(false);
    expect(matchesFilter({ categories: ['nodash'] }, event('nodash'))).toBe(true);
    expect(matchesFilter({ streams: ['order-1', 'user-1'] }, event('user-1'))).toBe(true);
    expect(matchesFilter({ streams: ['order-1'] }, event('order-10'))).toBe(false);
    expect(matchesFilter({ categories: ['order'], types: ['OrderPaid'] }, event('order-1', 'OrderPaid'))).toBe(true);
    expect(matchesFilter({ categories: ['order'], types: ['OrderPaid'] }, event('order-1', 'OrderPlaced'))).toBe(false);
  });

  it('bounds recordedAt: since inclusive, until exclusive', () => {
    expect(matchesFilter({ since: at }, event('a-1'))).toBe(true);
    expect(matchesFilter({ until: at }, event('a-1'))).toBe(false);
    expect(matchesFilter({ until: new Date(at.getTime() + 1) }, event('a-1'))).toBe(true);
    expect(matchesFilter({ since: new Date(at.getTime() + 1) }, event('a-1'))).toBe(false);
  });

  it('builds a server-side regex that selects at least what the client-side check keeps', () => {
    const select = (namespace: string, filter: Parameters<typeof serverFilterOf>[1], streamId: string, type = 'T') => {
      const server = serverFilterOf(namespace, filter);
      return new RegExp(server.regex).test(server.filterOn === 'streamName' ? streamId : type);
    };
    // the namespace alone: its streams, not the reserved ones, not other namespaces'
    expect(select('r1_', undefined, 'r1_order-1')).toBe(true);
    expect(select('r1_', undefined, 'r1_@relay-checkpoints')).toBe(false);
    expect(select('r1_', undefined, 'r2_order-1')).toBe(false);
    expect(select('r1_', undefined, '$$r1_order-1')).toBe(false);
    // no namespace: everything but system and reserved streams
    expect(select('', undefined, 'order-1')).toBe(true);
    expect(select('', undefined, '$ce-order')).toBe(false);
    expect(select('', undefined, '@relay-origin')).toBe(false);
    // categories: the category itself, or followed by a dash
    expect(select('r1_', { categories: ['order'] }, 'r1_order-1')).toBe(true);
    expect(select('r1_', { categories: ['order'] }, 'r1_order')).toBe(true);
    expect(select('r1_', { categories: ['order'] }, 'r1_orders-1')).toBe(false);
    expect(select('r1_', { categories: ['order', 'user'] }, 'r1_user-9')).toBe(true);
    expect(select('r1_', { categories: ['order'] }, 'r2_order-1')).toBe(false);
    // streams: exactly, metacharacters escaped
    expect(select('r1_', { streams: ['order-1'] }, 'r1_order-1')).toBe(true);
    expect(select('r1_', { streams: ['order-1'] }, 'r1_order-10')).toBe(false);
    expect(select('r1_', { streams: ['a.b(c)*'] }, 'r1_a.b(c)*')).toBe(true);
    expect(select('r1_', { streams: ['a.b(c)*'] }, 'r1_aXb(c)')).toBe(false);
    // types: on the event type outside a namespace, else on the namespace (types checked on the client)
    expect(serverFilterOf('', { types: ['OrderPlaced'] })).toEqual({ filterOn: 'eventType', regex: '^(?:OrderPlaced)$' });
    expect(serverFilterOf('r1_', { types: ['OrderPlaced'] }).filterOn).toBe('streamName');
    // streams win over categories (both are checked on the client)
    expect(serverFilterOf('r1_', { streams: ['a-1'], categories: ['b'] }).regex).toBe('^r1_(?:a-1)$');
  });

  it('escapes regular-expression metacharacters only', () => {
    expect(escapeRegex('order-1')).toBe('order-1');
    expect(escapeRegex('a.b*c+?^$|()[]{}\\')).toBe('a\\.b\\*c\\+\\?\\^\\$\\|\\(\\)\\[\\]\\{\\}\\\\');
    expect(new RegExp(`^${escapeRegex('x.[y]')}$`).test('x.[y]')).toBe(true);
  });
});

describe('EventStoreDB mapping: metadata and recordedAt', () => {
  const created = new Date('2025-01-02T03:04:05.678Z');

  it('carries an imported recordedAt in the metadata and strips it on read', () => {
    const imported = new Date('2024-02-29T23:59:58.123Z');
    const stored = encodeMetadata({ actor: 'user:7' }, imported);
    expect(stored).toEqual({ actor: 'user:7', [RECORDED_AT_KEY]: '2024-02-29T23:59:58.123Z' });
    expect(decodeMetadata(JSON.parse(JSON.stringify(stored)), created)).toEqual({ metadata: { actor: 'user:7' }, recordedAt: imported });
  });

  it('uses the server time when nothing was imported', () => {
    expect(encodeMetadata(undefined, undefined)).toEqual({});
    expect(decodeMetadata({}, created)).toEqual({ metadata: {}, recordedAt: created });
    expect(decodeMetadata(undefined, created)).toEqual({ metadata: {}, recordedAt: created });
    expect(decodeMetadata(new Uint8Array([1]), created)).toEqual({ metadata: {}, recordedAt: created });
    expect(decodeMetadata({ [RECORDED_AT_KEY]: 'not a date', a: 1 }, created)).toEqual({ metadata: { a: 1 }, recordedAt: created });
  });

  it('refuses an invalid recordedAt and the reserved key in caller metadata', () => {
    expect(() => encodeMetadata({}, new Date(Number.NaN))).toThrow(RangeError);
    expect(() => encodeMetadata({ [RECORDED_AT_KEY]: 'x' }, undefined)).toThrow(RangeError);
  });
});

describe('EventStoreDB mapping: recorded events', () => {
  const names = streamNames('r1_');
  const raw = (overrides: Partial<EsdbRecordedEvent> = {}): EsdbRecordedEvent => ({
    streamId: 'r1_order-1',
    id: '0b7f5a0e-3f0e-4c59-9d8e-5c1d2b7a9f10',
    revision: 2n,
    type: 'OrderPaid',
    data: { by: 'card' },
    metadata: { actor: 'user:7' },
    created: new Date('2025-01-02T03:04:05.678Z'),
    position: { commit: 1500n, prepare: 1500n },
    ...overrides,
  });

  it('converts names, versions, positions, metadata and time', () => {
    expect(toRecordedEvent(names, raw(), 999n)).toEqual({
      id: '0b7f5a0e-3f0e-4c59-9d8e-5c1d2b7a9f10',
      type: 'OrderPaid',
      data: { by: 'card' },
      metadata: { actor: 'user:7' },
      streamName: 'order-1',
      streamVersion: 3n,
      globalPosition: 501n,
      recordedAt: new Date('2025-01-02T03:04:05.678Z'),
    });
  });

  it('skips foreign, reserved and system events, and needs a position', () => {
    expect(toRecordedEvent(names, raw({ streamId: 'r2_order-1' }), 0n)).toBeUndefined();
    expect(toRecordedEvent(names, raw({ streamId: 'r1_@relay-origin' }), 0n)).toBeUndefined();
    expect(toRecordedEvent(names, raw({ type: '$metadata' }), 0n)).toBeUndefined();
    expect(() => toRecordedEvent(names, raw({ position: undefined }), 0n)).toThrow(/22\.6/);
    // servers without a position for an event send ulong.MaxValue
    expect(() => toRecordedEvent(names, raw({ position: { commit: 2n ** 64n - 1n, prepare: 2n ** 64n - 1n } }), 0n)).toThrow(/22\.6/);
  });
});

describe('EventStoreDB mapping: tags and sizes', () => {
  const created = new Date('2025-01-02T03:04:05.678Z');
  const tagger = (version: string) => ({ version, tagsOf: (event: { data: unknown }) => [`app:${(event.data as { app: string }).app}`] });
  const recorded = { id: 'e', type: 'T', data: { app: 'x' }, metadata: {}, streamName: 'a-1', streamVersion: 1n, globalPosition: 1n, recordedAt: created };

  it('carries the tags and their tagger version in the metadata, strips them on read, and refuses the reserved key', () => {
    const stored = encodeMetadata({ actor: 'cli' }, undefined, { version: '3', tags: ['app:x'] });
    expect(stored).toEqual({ actor: 'cli', [TAGS_KEY]: { version: '3', tags: ['app:x'] } });
    expect(decodeMetadata(stored, created)).toEqual({ metadata: { actor: 'cli' }, recordedAt: created, tags: { version: '3', tags: ['app:x'] } });
    expect(encodeMetadata({}, undefined, { version: '3', tags: [] })).toEqual({});
    expect(decodeMetadata({ [TAGS_KEY]: { version: 3, tags: 'x' } }, created)).toEqual({ metadata: {}, recordedAt: created, tags: undefined });
    expect(() => encodeMetadata({ [TAGS_KEY]: [] }, undefined)).toThrow(RangeError);
  });

  it('uses the stored tags of the same tagger version, derives them for another, and has none without a tagger', () => {
    expect(currentTags(tagger('3'), { version: '3', tags: ['stored'] }, recorded)).toEqual(['stored']);
    expect(currentTags(tagger('4'), { version: '3', tags: ['stored'] }, recorded)).toEqual(['app:x']);
    expect(currentTags(tagger('4'), undefined, recorded)).toEqual(['app:x']);
    expect(currentTags(undefined, { version: '3', tags: ['stored'] }, recorded)).toEqual([]);
  });

  it('filters by tags on the client: any of them; an empty list matches nothing', () => {
    const tags = () => ['app:x', 'app:y'];
    expect(matchesFilter({ tags: ['app:y', 'app:z'] }, recorded, tags)).toBe(true);
    expect(matchesFilter({ tags: ['app:z'] }, recorded, tags)).toBe(false);
    expect(matchesFilter({ tags: ['app:x'], types: ['Other'] }, recorded, tags)).toBe(false);
    expect(matchesFilter({ tags: ['app:x'] }, recorded)).toBe(false);
    let asked = 0;
    expect(matchesFilter({ types: ['T'] }, recorded, () => (asked++, []))).toBe(true);
    expect(asked).toBe(0);
  });

  it('counts an event as the UTF-8 bytes of its data and metadata as JSON', () => {
    expect(eventBytes({ ...recorded, data: { s: 'é' }, metadata: { a: 1 } })).toBe('{"s":"é"}'.length + 1 + '{"a":1}'.length);
  });
});
