/**
 * A text longer than a messenger's display limit, split for a client that asked for it: numbered
 * parts `(k/n) …` of at most `limit` characters (code points) each, prefix included, cut at
 * whitespace where the text has any within a part's reach and inside a word only where a word
 * alone is longer than a part. The whitespace at a cut is dropped; nothing else is lost.
 */
export const splitForDisplay = (text: string, limit: number): string[] => {
  if ([...text].length <= limit) return [text];
  // The prefix's width depends on the number of parts: try 1 digit, then more, until it fits.
  for (let digits = 1; digits <= 6; digits++) {
    const room = limit - (2 * digits + 4); // "(" n "/" n ") "
    if (room < 1) break;
    const chunks = cut([...text], room);
    if (String(chunks.length).length <= digits) return chunks.map((chunk, i) => `(${i + 1}/${chunks.length}) ${chunk}`);
  }
  throw new Error(`a display limit of ${limit} characters leaves no room for numbered parts`);
};

const isSpace = (c: string) => /\s/u.test(c);

/** Chunks of at most `room` characters, cut at the last whitespace within reach when there is one. */
const cut = (chars: string[], room: number): string[] => {
  const chunks: string[] = [];
  let start = 0;
  while (start < chars.length) {
    while (start < chars.length && isSpace(chars[start]!)) start++;
    if (start >= chars.length) break;
    let end = Math.min(start + room, chars.length);
    if (end < chars.length && !isSpace(chars[end]!)) {
      let space = end - 1;
      while (space > start && !isSpace(chars[space]!)) space--;
      if (space > start) end = space;
    }
    chunks.push(chars.slice(start, end).join('').trimEnd());
    start = end;
  }
  return chunks;
};
