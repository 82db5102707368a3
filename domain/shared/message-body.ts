/** The private part of a message, as sealed: contact id, text, group id. */
export interface MessageBody {
  c: string;
  t: string;
  g?: string;
}

/** What is sealed of messages' bodies (a send batch's under one key, or one inbound message): contact id, text and group id (or null) of each, in order. */
export const bodyStrings = (bodies: readonly MessageBody[]): (string | null)[] => {
  const strings = new Array<string | null>(bodies.length * 3);
  bodies.forEach((body, i) => {
    strings[i * 3] = body.c;
    strings[i * 3 + 1] = body.t;
    strings[i * 3 + 2] = body.g ?? null;
  });
  return strings;
};

/** The bodies that `bodyStrings` gave these strings; undefined when the strings are not three per message, contact id and text present. */
export const bodiesOfStrings = (strings: readonly (string | null)[]): MessageBody[] | undefined => {
  if (strings.length % 3 !== 0) return undefined;
  const bodies: MessageBody[] = [];
  for (let i = 0; i < strings.length; i += 3) {
    const [c, t, g] = [strings[i], strings[i + 1], strings[i + 2]];
    if (typeof c !== 'string' || typeof t !== 'string') return undefined;
    bodies.push(typeof g === 'string' ? { c, t, g } : { c, t });
  }
  return bodies;
};
