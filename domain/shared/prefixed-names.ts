/**
 * Names made of a prefix and an id (`inbound.<appId>`, `poll:<credentialId>`), the same string
 * each time for the same id. A string made afresh for each request is hashed again by every Map
 * it is looked up in (about 0.2 µs for a queue or bucket name, measured); a kept one carries its
 * hash. Holds at most `max` names, then starts over.
 */
export const prefixedNames = (prefix: string, max = 100_000): ((id: string) => string) => {
  const names = new Map<string, string>();
  return (id) => {
    let name = names.get(id);
    if (name === undefined) {
      if (names.size >= max) names.clear();
      name = `${prefix}${id}`;
      names.set(id, name);
    }
    return name;
  };
};
