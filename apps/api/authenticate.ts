import type { IncomingHttpHeaders } from 'node:http';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { CredentialView, CredentialsProjection } from '../../projections/credentials/credentials-projection.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';

/**
 * Which credential a request presents, by the header rules of each credential type:
 * `api-key` → `Authorization: Bearer` or `X-API-Key`; `webhook-bearer` → `Authorization: Bearer`;
 * `webhook-header` → only the header named by its `webhookAuthHeaderName`.
 * Header names arrive lower-cased (Node's parser); stored names are lower-cased at creation.
 */
export type Authentication =
  /** `keyHash`: the hash of the key presented (a rolled credential's current key, or its old one during the overlap). */
  | { kind: 'ok'; credential: CredentialView; appIds: string[]; keyHash: string }
  /** No header that could carry a key. */
  | { kind: 'missing' }
  /** A live credential's key, in a header its type does not accept. */
  | { kind: 'wrong-header' }
  /** A key that maps to no live credential (unknown, deleted, or replaced by a roll whose overlap has ended). */
  | { kind: 'unknown' };

type Via = { header: 'authorization' } | { header: 'x-api-key' } | { header: 'custom'; name: string };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

const accepts = (credential: CredentialView, via: Via) => {
  switch (credential.type) {
    case 'api-key':
      return via.header === 'authorization' || via.header === 'x-api-key';
    case 'webhook-bearer':
      return via.header === 'authorization';
    case 'webhook-header':
      return via.header === 'custom' && via.name === credential.webhookAuthHeaderName;
  }
};

const single = (value: string | string[] | undefined) => (typeof value === 'string' && value !== '' ? value : undefined);

/** A credential's live apps, kept per credential while the apps read model does not change (the same array each time). */
const liveApps = new WeakMap<CredentialView, { readonly revision: number; readonly appIds: string[] }>();

/**
 * The credential's apps that are live, in its order. Worked out once per credential and change of
 * the apps (a key of 25 apps looked 25 apps up on every request); the array is shared: read only.
 */
export const liveAppsOf = (credential: CredentialView, apps: AppsProjection): string[] => {
  const known = liveApps.get(credential);
  if (known?.revision === apps.revision) return known.appIds;
  const appIds = credential.appIds.filter((appId) => apps.isLive(appId));
  liveApps.set(credential, { revision: apps.revision, appIds });
  return appIds;
};

const VIA_AUTHORIZATION: Via = { header: 'authorization' };
const VIA_X_API_KEY: Via = { header: 'x-api-key' };

export const authenticate = (
  headers: IncomingHttpHeaders,
  credentials: CredentialsProjection,
  apps: AppsProjection,
  /** The time the key is checked at (ms): a rolled credential's old key works until its overlap ends. */
  now = Date.now(),
): Authentication => {
  const presented: Array<{ key: string; via: Via }> = [];
  const bearer = BEARER.exec(single(headers.authorization) ?? '')?.[1];
  if (bearer) presented.push({ key: bearer, via: VIA_AUTHORIZATION });
  const xApiKey = single(headers['x-api-key'])?.trim();
  if (xApiKey) presented.push({ key: xApiKey, via: VIA_X_API_KEY });
  // A custom header counts only when it carries the key of the credential that named it: any
  // other value in it (a header another client sends for its own reasons) is no key at all. The
  // headers are walked only when some credential names one (most requests: none).
  if (credentials.hasCustomHeaderNames) {
    for (const name in headers) {
      if (!credentials.isCustomHeaderName(name)) continue;
      const value = single(headers[name])?.trim();
      if (!value) continue;
      const credential = credentials.byKeyHash(hashKey(value), now);
      if (credential?.type === 'webhook-header' && credential.webhookAuthHeaderName === name) presented.push({ key: value, via: { header: 'custom', name } });
    }
  }
  if (presented.length === 0) return { kind: 'missing' };
  let wrongHeader = false;
  for (const { key, via } of presented) {
    const keyHash = hashKey(key);
    const credential = credentials.byKeyHash(keyHash, now);
    if (!credential) continue;
    if (!accepts(credential, via)) {
      wrongHeader = true;
      continue;
    }
    return { kind: 'ok', credential, appIds: liveAppsOf(credential, apps), keyHash };
  }
  return wrongHeader ? { kind: 'wrong-header' } : { kind: 'unknown' };
};
