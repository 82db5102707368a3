import type { FastifyInstance } from 'fastify';
import { ClientError } from './error-handler.ts';

/**
 * The largest body of the account API and of the dashboard routes (the proxy's too): their largest
 * fields are a few KiB (docs/limits.md), and the sign-in routes answer anyone, so a body costs little.
 */
export const DASHBOARD_BODY_LIMIT = 256 * 1024;
/** The deepest nesting of arrays and objects a JSON body may have (Relay's own bodies nest 3 deep). */
export const MAX_JSON_DEPTH = 32;
/** The most arrays, objects, members and elements a JSON body may have (a send batch of 50 has about 550). */
export const MAX_JSON_TOKENS = 10_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Why a JSON text is refused before it is parsed, or undefined. One pass over the text that builds
 * nothing: strings are skipped with a native search for their closing quote, and the count stops at
 * the first bound passed. So a body nested a million deep (which JSON.parse took about half a second
 * of the main thread to refuse, before authentication) costs microseconds, and any body at most a
 * linear scan of its bytes. Malformed text that passes is left to JSON.parse to refuse.
 */
export const jsonShapeRefusal = (text: string): string | undefined => {
  let depth = 0;
  let tokens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return undefined; // unterminated: JSON.parse says so
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return `Invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels`;
      if (++tokens > MAX_JSON_TOKENS) return `Invalid JSON: more than ${MAX_JSON_TOKENS} values`;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
    else if ((c === COMMA || c === COLON) && ++tokens > MAX_JSON_TOKENS) return `Invalid JSON: more than ${MAX_JSON_TOKENS} values`;
  }
  return undefined;
};

/**
 * Makes every `application/json` body of the app pass the shape check before Fastify's own parser
 * (which keeps refusing `__proto__` and `constructor.prototype` keys) builds it: one place for every
 * JSON route. A refused body is a 400 in the area's shape (error-handler.ts).
 */
export const boundJsonBodies = (app: FastifyInstance): void => {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const refused = jsonShapeRefusal(body as string);
    if (refused !== undefined) return done(new ClientError(refused), undefined);
    parse(request, body as string, done);
  });
};
