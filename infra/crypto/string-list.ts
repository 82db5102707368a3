/**
 * A list of strings (or nulls) as one string, for sealed payloads on the hot path: the bodies of a
 * send batch of 50 messages are 150 strings, and JSON.stringify of them was about a third of the
 * cost of sealing them (17 µs, against 6 µs for this, encoded to UTF-8 included).
 *
 * Layout, in the manner of netstrings: each item is `-` for null, or its length in UTF-16 code
 * units, a colon and the string itself (`5:hello`), the items one after the other.
 */

export const encodeStringList = (items: readonly (string | null)[]): string => {
  let text = '';
  for (const item of items) text += item === null ? '-' : `${item.length}:${item}`;
  return text;
};

/** The items of `encodeStringList`'s text; RangeError when the text is not such a list. */
export const decodeStringList = (text: string): (string | null)[] => {
  const items: (string | null)[] = [];
  let at = 0;
  while (at < text.length) {
    if (text.charCodeAt(at) === 0x2d /* - */) {
      items.push(null);
      at += 1;
      continue;
    }
    const colon = text.indexOf(':', at);
    const digits = colon === -1 ? '' : text.slice(at, colon);
    if (!/^(0|[1-9][0-9]{0,9})$/.test(digits)) throw new RangeError(`A string list has no item length at ${at}`);
    const end = colon + 1 + Number(digits);
    if (end > text.length) throw new RangeError(`A string list ends inside the item at ${at}`);
    items.push(text.slice(colon + 1, end));
    at = end;
  }
  return items;
};
