/**
 * Compares two snapshots of one read model (what `Projection.snapshot()` returns) as data, not as
 * text: object keys in any order, and lists of entries as sets keyed by their identity, so two
 * read models that hold the same entries are equal whatever order they were built in.
 *
 * A snapshot is split into collections of entries:
 * - a list is one collection, named after the read model (apps, credentials);
 * - an object whose values are all lists has one collection per key (users: users and sessions);
 * - anything else is one entry, named after the read model.
 *
 * An entry's identity is, in this order: the key of a `[key, value]` pair (sessions, by token
 * hash), the record's `id` (users, apps), the record's `<singular of the collection>Id`
 * (credentials: credentialId), else the whole entry (then a changed entry shows as one missing
 * and one extra). Inside an entry, lists of records with an `id` are sets too (an app's
 * app-messengers); other lists keep their order.
 *
 * Keys of `[key, value]` pairs may be derived from secrets (a session's token hash): the report
 * shows only their first characters.
 */

export interface EntryDifference {
  id: string;
  /** The paths of the fields that differ (`settings.name`). */
  fields: string[];
}

export interface Listed<T> {
  count: number;
  /** At most `limit` of them. */
  items: T[];
}

export interface ModelComparison {
  name: string;
  equal: boolean;
  /** Entries per collection, in the live read model and in the rebuilt one. */
  live: Record<string, number>;
  rebuilt: Record<string, number>;
  missingInLive: Listed<string>;
  extraInLive: Listed<string>;
  different: Listed<EntryDifference>;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Entry {
  /** What the report calls it. */
  label: string;
  value: Json;
}

const isRecord = (value: Json | undefined): value is { [key: string]: Json } => typeof value === 'object' && value !== null && !Array.isArray(value);

const isPair = (value: Json): value is [string, Json] => Array.isArray(value) && value.length === 2 && typeof value[0] === 'string';

/** As it would be written to the snapshot file (undefined fields dropped, dates as strings). */
const asJson = (value: unknown): Json => (value === undefined ? null : (JSON.parse(JSON.stringify(value)) as Json));

const recordId = (value: Json): string | undefined => (isRecord(value) && typeof value.id === 'string' ? value.id : undefined);

/** One text per value, equal for equal data: object keys sorted, lists of records with an id sorted by it. */
export const canonical = (value: Json): string => {
  if (Array.isArray(value)) {
    const items = value.every((item) => recordId(item) !== undefined)
      ? [...value].sort((a, b) => (recordId(a)! < recordId(b)! ? -1 : recordId(a)! > recordId(b)! ? 1 : 0))
      : value;
    return `[${items.map(canonical).join(',')}]`;
  }
  if (isRecord(value))
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key]!)}`)
      .join(',')}}`;
  return JSON.stringify(value);
};

const KEY_PREVIEW = 8;
const preview = (key: string) => (key.length > KEY_PREVIEW ? `${key.slice(0, KEY_PREVIEW)}…` : key);
const singular = (collection: string) => collection.replace(/s$/, '');

/** The entries of one collection by identity. */
const entriesOf = (collection: string, items: Json[]): Map<string, Entry> => {
  const entries = new Map<string, Entry>();
  for (const item of items) {
    let key: string;
    let entry: Entry;
    const idField = `${singular(collection)}Id`;
    if (isPair(item)) {
      key = `pair:${item[0]}`;
      entry = { label: preview(item[0]), value: item[1] };
    } else if (recordId(item) !== undefined) {
      key = `id:${recordId(item)!}`;
      entry = { label: recordId(item)!, value: item };
    } else if (isRecord(item) && typeof item[idField] === 'string') {
      key = `id:${item[idField]}`;
      entry = { label: item[idField], value: item };
    } else {
      const text = canonical(item);
      key = `value:${text}`;
      entry = { label: text.length > 60 ? `${text.slice(0, 59)}…` : text, value: item };
    }
    // Two entries with one identity should not happen; if they do, both take part.
    let unique = key;
    for (let n = 2; entries.has(unique); n++) unique = `${key}#${n}`;
    entries.set(unique, unique === key ? entry : { ...entry, label: `${entry.label} (#${unique.slice(key.length + 1)})` });
  }
  return entries;
};

/** The collections of a snapshot, each with its entries by identity. */
const collectionsOf = (name: string, snapshot: Json): Map<string, Map<string, Entry>> => {
  if (Array.isArray(snapshot)) return new Map([[name, entriesOf(name, snapshot)]]);
  if (isRecord(snapshot) && Object.keys(snapshot).length > 0 && Object.values(snapshot).every(Array.isArray))
    return new Map(Object.entries(snapshot).map(([collection, items]) => [collection, entriesOf(collection, items as Json[])]));
  return new Map([[name, new Map([['whole', { label: name, value: snapshot }]])]]);
};

/** The paths at which two values differ: into objects field by field, lists and scalars as a whole. */
const differingFields = (a: Json | undefined, b: Json | undefined, path: string): string[] => {
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) => differingFields(a[key], b[key], path === '' ? key : `${path}.${key}`));
  }
  const same = a === undefined || b === undefined ? a === b : canonical(a) === canonical(b);
  return same ? [] : [path === '' ? '(value)' : path];
};

/** Compares the live snapshot of a read model with the rebuilt one; lists at most `limit` differences of each kind. */
export const compareSnapshots = (name: string, live: unknown, rebuilt: unknown, limit = 20): ModelComparison => {
  const liveCollections = collectionsOf(name, asJson(live));
  const rebuiltCollections = collectionsOf(name, asJson(rebuilt));
  const names = [...new Set([...rebuiltCollections.keys(), ...liveCollections.keys()])];
  const qualified = names.length > 1 || names[0] !== name;
  const missing: string[] = [];
  const extra: string[] = [];
  const different: EntryDifference[] = [];

  for (const collection of names) {
    const liveEntries = liveCollections.get(collection) ?? new Map<string, Entry>();
    const rebuiltEntries = rebuiltCollections.get(collection) ?? new Map<string, Entry>();
    const label = (entry: Entry) => (qualified ? `${collection}/${entry.label}` : entry.label);
    for (const [key, entry] of rebuiltEntries) {
      const other = liveEntries.get(key);
      if (!other) missing.push(label(entry));
      else if (canonical(other.value) !== canonical(entry.value)) different.push({ id: label(entry), fields: differingFields(other.value, entry.value, '') });
    }
    for (const [key, entry] of liveEntries) if (!rebuiltEntries.has(key)) extra.push(label(entry));
  }

  const counts = (collections: Map<string, Map<string, Entry>>) =>
    Object.fromEntries(names.map((collection) => [collection, collections.get(collection)?.size ?? 0]));
  const listed = <T>(items: T[]): Listed<T> => ({ count: items.length, items: items.slice(0, limit) });
  return {
    name,
    equal: missing.length === 0 && extra.length === 0 && different.length === 0,
    live: counts(liveCollections),
    rebuilt: counts(rebuiltCollections),
    missingInLive: listed(missing),
    extraInLive: listed(extra),
    different: listed(different),
  };
};
