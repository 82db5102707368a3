import { expect } from 'vitest';
import type { RelayProcess } from './relay-process.ts';
import { startupDeadlineMs } from './startup-deadline.ts';
import { waitFor } from './wait-for.ts';

export const DASHBOARD = '/dashboard/api/dashboard';

export interface Account {
  session: string;
  cookie: string;
}

/** An operator bootstrap: `relay session create` prints the token used as the relay_session cookie. */
export const createAccount = async (relay: RelayProcess, email = `op-${Math.random().toString(36).slice(2)}@example.com`): Promise<Account> => {
  const result = await relay.cli(['session', 'create', '--email', email]);
  expect(result.code, result.stderr).toBe(0);
  const session = result.stdout.trim();
  expect(session).toMatch(/^rls_[A-Za-z0-9_-]{43}$/);
  return { session, cookie: `relay_session=${session}` };
};

export const dashboard = async (relay: RelayProcess, account: Account, method: string, route: string, body?: unknown) => {
  const res = await fetch(`${relay.url}${DASHBOARD}${route}`, {
    method,
    headers: { cookie: account.cookie, ...(body !== undefined || method === 'DELETE' || method === 'PUT' ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
};

/** Turns the invite link of an app-messenger's group on: Relay's own route (the interface's GET only reads it). */
export const turnOnInviteLink = async (relay: RelayProcess, account: Account, appMessengerId: string) => {
  const res = await fetch(`${relay.url}/dashboard/group/invite-link`, { method: 'POST', headers: { cookie: account.cookie, 'content-type': 'application/json' }, body: JSON.stringify({ appMessengerId }) });
  return { status: res.status, body: (await res.json()) as any };
};

export interface AppFixture {
  appId: string;
  messengers: Array<{ id: string; messenger: string; address: string | null; status: string }>;
}

/**
 * Creates an app and waits until its app-messengers have their bot identity (status active): the
 * first app of a Relay waits for its delivery pipeline to start, so this waits up to the start-up
 * deadline (startup-deadline.ts).
 */
export const createApp = async (relay: RelayProcess, account: Account, protocol = ['signal', 'simplex', 'session'], name = 'Support bot'): Promise<AppFixture> => {
  const created = await dashboard(relay, account, 'POST', '/apps', { name, protocol });
  expect(created.status).toBe(200);
  const appId = created.body.id as string;
  const deadline = Date.now() + startupDeadlineMs();
  for (;;) {
    const list = await dashboard(relay, account, 'GET', '/apps');
    const app = (list.body.items as any[]).find((a) => a.id === appId);
    if (app.messengers.every((m: any) => m.status === 'active')) return { appId, messengers: app.messengers };
    if (Date.now() > deadline) throw new Error(`app-messengers not provisioned: ${JSON.stringify(app.messengers)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

export const createKey = async (relay: RelayProcess, account: Account, appIds: string[], type = 'api-key', extra: Record<string, unknown> = {}) => {
  const res = await dashboard(relay, account, 'POST', '/credentials', { type, appIds, name: `${type} key`, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { credentialId: res.body.credentialId as string, secret: res.body.secret as string };
};

export const api = async (relay: RelayProcess, method: string, route: string, options: { key?: string; headers?: Record<string, string>; body?: unknown; rawBody?: string } = {}) => {
  const res = await fetch(`${relay.url}/api/v1${route}`, {
    method,
    headers: {
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...(options.body !== undefined || options.rawBody !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.rawBody !== undefined ? { body: options.rawBody } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : undefined };
};

export { waitFor } from './wait-for.ts';

/** Polls with `key` until `count` messages came back in all (each poll must answer 200); returns them in order. */
export const pollMessages = async (relay: RelayProcess, key: string, count: number, timeoutMs = 15_000): Promise<any[]> => {
  const polled: any[] = [];
  await waitFor(
    async () => {
      const res = await api(relay, 'GET', '/messages/poll?limit=50', { key });
      expect(res.status).toBe(200);
      polled.push(...res.body.messages);
      return polled.length >= count ? true : undefined;
    },
    timeoutMs,
    `${count} polled messages`,
  );
  return polled;
};
