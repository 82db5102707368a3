/**
 * HTTP Digest access authentication (RFC 7616, MD5 with qop=auth), what monero-wallet-rpc's
 * `--rpc-login` asks for. Node's fetch does not do it.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface DigestChallenge {
  readonly realm: string;
  readonly nonce: string;
  readonly qop: string | undefined;
  readonly opaque: string | undefined;
  readonly algorithm: string;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** The `key=value` and `key="quoted value"` pairs of one challenge. */
const parameters = (text: string): Map<string, string> => {
  const found = new Map<string, string>();
  let at = 0;
  while (at < text.length) {
    while (at < text.length && (text[at] === ',' || text[at] === ' ' || text[at] === '\t')) at++;
    const equals = text.indexOf('=', at);
    if (equals < 0) break;
    const key = text.slice(at, equals).trim().toLowerCase();
    at = equals + 1;
    let value = '';
    if (text[at] === '"') {
      at++;
      while (at < text.length && text[at] !== '"') {
        if (text[at] === '\\' && at + 1 < text.length) at++;
        value += text[at];
        at++;
      }
      at++;
    } else {
      const end = text.indexOf(',', at);
      value = text.slice(at, end < 0 ? text.length : end).trim();
      at = end < 0 ? text.length : end;
    }
    found.set(key, value);
  }
  return found;
};

/**
 * The MD5 challenge among those of a `WWW-Authenticate` header (fetch joins several headers with
 * ", "; monero-wallet-rpc offers MD5 and MD5-sess), or undefined if there is none.
 */
export const parseDigestChallenge = (header: string | null): DigestChallenge | undefined => {
  if (!header) return undefined;
  const challenges = header
    .split(/(?:^|,)\s*(?=digest\s)/i)
    .map((part) => part.trim())
    .filter((part) => /^digest\s/i.test(part))
    .map((part) => parameters(part.slice('digest'.length)));
  for (const challenge of challenges) {
    const algorithm = challenge.get('algorithm') ?? 'MD5';
    const realm = challenge.get('realm');
    const nonce = challenge.get('nonce');
    if (algorithm.toUpperCase() !== 'MD5' || realm === undefined || nonce === undefined) continue;
    const qops = (challenge.get('qop') ?? '').split(',').map((q) => q.trim());
    return { realm, nonce, qop: qops.includes('auth') ? 'auth' : undefined, opaque: challenge.get('opaque'), algorithm: 'MD5' };
  }
  return undefined;
};

/** The `Authorization` header for one request; `count` is this nonce's use number (1, 2, …). */
export const digestAuthorization = (
  challenge: DigestChallenge,
  request: { readonly username: string; readonly password: string; readonly method: string; readonly uri: string; readonly count: number; readonly cnonce?: string },
): string => {
  const ha1 = md5(`${request.username}:${challenge.realm}:${request.password}`);
  const ha2 = md5(`${request.method}:${request.uri}`);
  const quote = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;
  const fields = [`username=${quote(request.username)}`, `realm=${quote(challenge.realm)}`, `nonce=${quote(challenge.nonce)}`, `uri=${quote(request.uri)}`, 'algorithm=MD5'];
  if (challenge.qop === 'auth') {
    const nc = request.count.toString(16).padStart(8, '0');
    const cnonce = request.cnonce ?? randomBytes(12).toString('hex');
    fields.push(`qop=auth`, `nc=${nc}`, `cnonce=${quote(cnonce)}`, `response=${quote(md5(`${ha1}:${challenge.nonce}:${nc}:${cnonce}:auth:${ha2}`))}`);
  } else {
    fields.push(`response=${quote(md5(`${ha1}:${challenge.nonce}:${ha2}`))}`);
  }
  if (challenge.opaque !== undefined) fields.push(`opaque=${quote(challenge.opaque)}`);
  return `Digest ${fields.join(', ')}`;
};
