/**
 * Every success answer of the account API, as a real Relay gives it through the dashboard proxy,
 * is what `/docs/account.json` declares for its operation and status: no field missing, none
 * extra (the document's objects say `additionalProperties: false`), every type and enum right.
 * The answers are written as the handlers build them (apps/account/app.ts), not filtered through
 * the schemas, so this is where a drift between the two would show. The one success answer not
 * caused here is the invite link's 202 (`POST /dashboard/group/invite-link`: the simulator makes
 * links at once); its body is checked
 * against its schema by the compiler (the route's reply is typed by it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox, type SmtpInbox } from '../support/smtp-inbox.ts';

type Schema = { [key: string]: any };
type Document = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>; components?: { schemas?: Record<string, Schema> } };

/** What is wrong with `value` under an OpenAPI 3.0 schema (the subset zod's documents use), as paths. */
const problemsOf = (document: Document, schema: Schema, value: unknown, at = '$'): string[] => {
  if (typeof schema.$ref === 'string') return problemsOf(document, document.components!.schemas![schema.$ref.replace('#/components/schemas/', '')]!, value, at);
  if (value === null) return schema.nullable === true ? [] : [`${at}: null`];
  if (Array.isArray(schema.anyOf)) return schema.anyOf.some((branch: Schema) => problemsOf(document, branch, value, at).length === 0) ? [] : [`${at}: matches none of anyOf`];
  if (Array.isArray(schema.oneOf)) return schema.oneOf.filter((branch: Schema) => problemsOf(document, branch, value, at).length === 0).length === 1 ? [] : [`${at}: does not match exactly one of oneOf`];
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`];
  switch (schema.type) {
    case undefined:
      return [];
    case 'string':
      return typeof value === 'string' ? [] : [`${at}: not a string`];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${at}: not a boolean`];
    case 'number':
      return typeof value === 'number' ? [] : [`${at}: not a number`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${at}: not an integer`];
    case 'array':
      return Array.isArray(value) ? value.flatMap((item, i) => problemsOf(document, schema.items ?? {}, item, `${at}[${i}]`)) : [`${at}: not an array`];
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return [`${at}: not an object`];
      const record = value as Record<string, unknown>;
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return [
        ...((schema.required ?? []) as string[]).filter((key) => !(key in record)).map((key) => `${at}.${key}: missing`),
        ...Object.entries(record).flatMap(([key, item]) => {
          if (properties[key]) return problemsOf(document, properties[key], item, `${at}.${key}`);
          if (schema.additionalProperties === false) return [`${at}.${key}: not declared`];
          return typeof schema.additionalProperties === 'object' ? problemsOf(document, schema.additionalProperties, item, `${at}.${key}`) : [];
        }),
      ];
    }
    default:
      return [`${at}: unknown type ${String(schema.type)}`];
  }
};

const DASHBOARD = '/dashboard/api/dashboard';
const CONTACT = '+15550300001';

describe("the account API's answers are what its document declares", () => {
  let smtp: SmtpInbox;
  let relay: RelayProcess;
  let account: Account;
  let document: Document;
  /** `METHOD /path status` of every answer checked. */
  const checked = new Set<string>();

  beforeAll(async () => {
    smtp = await startSmtpInbox();
    relay = await startRelayProcess({
      env: {
        SMTP_URL: smtp.url,
        PAYMENT_PROCESSOR: 'simulator',
        BILLING_RATE: '150',
        PAYMENT_WATCH_INTERVAL_MS: '100',
        GROUP_CHANGE_WAIT_MS: '1500',
        WEBHOOK_ALLOW_LOCAL: 'true',
      },
    });
    account = await createAccount(relay, 'answers@example.com');
    document = (await (await fetch(`${relay.url}/docs/account.json`)).json()) as Document;
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await smtp?.close();
  });

  /**
   * Calls an operation as its document names it (`POST /dashboard/api/dashboard/apps`, with path
   * parameters filled from `params`), expects `status`, and checks the answer against the document.
   */
  const call = async (
    method: string,
    template: string,
    status: number,
    options: { params?: Record<string, string>; query?: string; body?: unknown; cookie?: string | null } = {},
  ): Promise<{ body: any; headers: Headers }> => {
    const route = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params?.[name] ?? ''));
    const cookie = options.cookie === undefined ? account.cookie : options.cookie;
    const res = await fetch(`${relay.url}${route}${options.query ?? ''}`, {
      method,
      redirect: 'manual',
      headers: { ...(cookie ? { cookie } : {}), ...(options.body !== undefined || method === 'DELETE' || method === 'PUT' ? { 'content-type': 'application/json' } : {}) },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const body = (await res.json()) as unknown;
    expect(res.status, `${method} ${route}: ${JSON.stringify(body)}`).toBe(status);
    const declared = document.paths[template]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']?.schema;
    expect(declared, `${method} ${template} declares ${status}`).toBeDefined();
    expect(problemsOf(document, declared!, body), `${method} ${template} ${status}: ${JSON.stringify(body)}`).toEqual([]);
    checked.add(`${method} ${template} ${status}`);
    return { body, headers: res.headers };
  };

  it('user, apps, app-messengers and credentials', async () => {
    await call('GET', `${DASHBOARD}/user`, 200);
    await call('POST', `${DASHBOARD}/user`, 200, { body: { name: 'Answers' } });
    const app = (await call('POST', `${DASHBOARD}/apps`, 200, { body: { name: 'Answers bot', protocol: ['signal', 'simplex'] } })).body;
    const webhook = await call('POST', `${DASHBOARD}/apps/update`, 200, {
      body: { appId: app.id, deliveryType: 'webhook', webhookUrl: 'http://127.0.0.1:9/hook', webhookAuthType: 'bearer', webhookAuthSecret: 'token' },
    });
    // The signing secret made for webhook delivery is shown this once (the optional field), and a rotation shows the next one.
    expect(webhook.body.webhookSigningSecret).toMatch(/^whsec_/);
    expect((await call('POST', `${DASHBOARD}/apps/update`, 200, { body: { appId: app.id, rotateWebhookSigningSecret: true } })).body.webhookPreviousSigningSecretUntil).toEqual(expect.any(String));
    await call('POST', `${DASHBOARD}/apps/update`, 200, { body: { appId: app.id, deliveryType: 'poll' } });
    const listed = await waitFor(async () => {
      const { body } = await call('GET', `${DASHBOARD}/apps`, 200);
      return body.items[0].messengers.every((m: { address: string | null }) => m.address !== null) ? body : undefined;
    });
    const signal = listed.items[0].messengers.find((m: { messenger: string }) => m.messenger === 'signal');
    await call('PUT', `${DASHBOARD}/app-messengers/{id}`, 200, { params: { id: signal.id }, body: { status: 'disabled' } });
    await call('PUT', `${DASHBOARD}/app-messengers/{id}`, 200, { params: { id: signal.id }, body: { status: 'active' } });

    const credential = (await call('POST', `${DASHBOARD}/credentials`, 200, { body: { type: 'api-key', appIds: [app.id], name: 'answers' } })).body;
    await call('POST', `${DASHBOARD}/credentials`, 200, { body: { type: 'webhook-header', appIds: [app.id], name: 'hook', webhookUrl: 'http://127.0.0.1:9/in', webhookAuthHeaderName: 'X-Hook' } });
    await call('GET', `${DASHBOARD}/credentials`, 200);
    expect((await call('GET', `${DASHBOARD}/credentials-full`, 200)).body.items.map((c: { secret: string }) => c.secret)).toContain(credential.secret);
    await call('DELETE', `${DASHBOARD}/credentials/{id}`, 200, { params: { id: credential.credentialId } });

    const doomed = (await call('POST', `${DASHBOARD}/apps`, 200, { body: { name: 'Doomed', protocol: ['session'] } })).body;
    await call('DELETE', `${DASHBOARD}/apps/{appId}`, 200, { params: { appId: doomed.id } });
  });

  it('groups, done and pending', async () => {
    const app = (await call('POST', `${DASHBOARD}/apps`, 200, { body: { name: 'Group bot', protocol: ['signal'] } })).body;
    const signal = await waitFor(async () => {
      const { body } = await call('GET', `${DASHBOARD}/apps`, 200);
      const messenger = body.items.find((a: { id: string }) => a.id === app.id).messengers[0];
      return messenger.address !== null ? (messenger.id as string) : undefined;
    });
    const members = () => call('GET', `${DASHBOARD}/group/members`, 200, { query: `?appMessengerId=${signal}` });
    const change = (operation: string, contactId: string, status: 200 | 202) =>
      call('POST', `${DASHBOARD}/group/${operation}`, status, { body: { appMessengerId: signal, contactId } }).then(({ body }) => body.data.requestId as string);
    await members();
    await change('members/add', '+15550300010', 200);
    await change('promote-admin', '+15550300010', 200);
    await change('demote-admin', '+15550300010', 200);
    await change('members/remove', '+15550300010', 200);
    // Read before it is turned on (null), turned on by Relay's own POST, read again.
    await call('GET', `${DASHBOARD}/group/invite-link`, 200, { query: `?appMessengerId=${signal}` });
    await call('POST', '/dashboard/group/invite-link', 200, { body: { appMessengerId: signal } });
    expect((await call('GET', `${DASHBOARD}/group/invite-link`, 200, { query: `?appMessengerId=${signal}` })).body.inviteLink).toEqual(expect.any(String));
    await change('members/add', '+15550300011', 200);
    await change('members/add', '+15550300012', 200);
    await change('promote-admin', '+15550300012', 200);
    await change('members/add', '+15550300013', 200);

    // Each change refused at once and after 1 s, done after 3 s more: longer than the route waits (1.5 s).
    const pending = [
      ['members/add', '+15550300014'],
      ['promote-admin', '+15550300011'],
      ['demote-admin', '+15550300012'],
      ['members/remove', '+15550300013'],
    ] as const;
    for (const [, contactId] of pending) expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contactId, '--times', '2'])).code).toBe(0);
    const requestIds = await Promise.all(pending.map(([operation, contactId]) => change(operation, contactId, 202)));
    // They go on: the member list names them among its changes, pending for now.
    expect((await members()).body.changes.map((c: { requestId: string }) => c.requestId)).toEqual(expect.arrayContaining(requestIds));
  });

  it('billing: configuration and invoices', async () => {
    await call('GET', `${DASHBOARD}/configuration`, 200, { cookie: null });
    const paid = (await call('POST', `${DASHBOARD}/invoices`, 200, { body: { asset: 'XMR', planId: 'paid-monthly' } })).body;
    const cancelled = (await call('POST', `${DASHBOARD}/invoices`, 200, { body: { asset: 'XMR', planId: 'paid-annual' } })).body;
    expect((await relay.cli(['simulate', 'pay', '--invoice', paid.invoiceId])).code).toBe(0);
    await waitFor(async () => {
      const { body } = await call('GET', `${DASHBOARD}/invoices/{invoiceId}/payment-status`, 200, { params: { invoiceId: paid.invoiceId } });
      return body.payments.length > 0 || undefined;
    }, 15_000, 'the payment seen');
    await call('GET', `${DASHBOARD}/invoices/{invoiceId}`, 200, { params: { invoiceId: paid.invoiceId } });
    await call('POST', `${DASHBOARD}/invoices/{invoiceId}/cancel`, 200, { params: { invoiceId: cancelled.invoiceId }, body: {} });
    await call('GET', `${DASHBOARD}/invoices`, 200);
  });

  it('recovery code, notification preferences, sign-in by e-mail and recovery, sessions', async () => {
    const { recoveryCode } = (await call('POST', `${DASHBOARD}/recovery-code`, 200)).body.data;
    const preferences = (await call('GET', `${DASHBOARD}/notification-preferences`, 200)).body;
    await call('POST', `${DASHBOARD}/notification-preferences`, 200, { body: { preferences: { ...preferences.preferences, signal: { ...preferences.preferences.signal, 'sign-in': true } } } });

    await call('POST', '/dashboard/auth/email', 202, { body: { email: 'answers@example.com' }, cookie: null });
    const mail = await smtp.next('answers@example.com', { matches: (m) => m.subject === 'Your Relay sign-in link' });
    const link = /\/dashboard\/auth\/email\/([0-9a-f]{24}\.[A-Za-z0-9_-]{43})/.exec(mail.text)![1]!;
    await call('GET', '/dashboard/auth/email/{link}', 303, { params: { link }, cookie: null }); // to the page that signs in
    await call('POST', '/dashboard/auth/email/{link}', 200, { params: { link }, cookie: null });
    await call('GET', '/dashboard/auth/email/{link}', 303, { params: { link }, cookie: null }); // used: the error body

    const recovered = (await call('POST', '/dashboard/auth/recover', 200, { body: { email: 'answers@example.com', code: recoveryCode }, cookie: null })).body;
    const sessions = (await call('GET', '/dashboard/auth/sessions', 200)).body.items as Array<{ sessionId: string }>;
    expect(sessions.map((s) => s.sessionId)).toContain(recovered.data.sessionId);
    await call('DELETE', '/dashboard/auth/sessions/{sessionId}', 200, { params: { sessionId: recovered.data.sessionId } });
  });

  it('linked contacts and sign-in through a messenger', async () => {
    const bot = (await call('POST', `${DASHBOARD}/apps`, 200, { body: { name: 'Code bot', protocol: ['signal'] } })).body;
    const asked = (await call('POST', '/dashboard/auth/contacts/link', 202)).body.data;
    await call('GET', '/dashboard/auth/contacts/link/{linkId}', 200, { params: { linkId: asked.linkId } });
    const write = (text: string) => relay.cli(['simulate', 'inbound', '--app', bot.id, '--messenger', 'signal', '--contact', CONTACT, '--text', text]);
    expect((await write(asked.command)).code).toBe(0);
    const linked = await waitFor(async () => {
      const { body } = await call('GET', '/dashboard/auth/contacts/link/{linkId}', 200, { params: { linkId: asked.linkId } });
      return body.data.status === 'linked' ? body.data : undefined;
    });
    expect(linked.contact).toMatchObject({ messenger: 'signal' });
    await call('GET', '/dashboard/auth/contacts', 200);

    const started = (await call('POST', '/dashboard/auth/messenger', 202, { body: {}, cookie: null })).body.data;
    const token = { params: { pollToken: started.pollToken }, cookie: null };
    await call('GET', '/dashboard/auth/messenger/{pollToken}', 200, token);
    await call('POST', '/dashboard/auth/messenger/{pollToken}', 200, token);
    expect((await write(started.command)).code).toBe(0);
    await waitFor(async () => ((await call('GET', '/dashboard/auth/messenger/{pollToken}', 200, token)).body.data.status === 'confirmed' ? true : undefined));
    const signedIn = (await call('POST', '/dashboard/auth/messenger/{pollToken}', 200, token)).body.data;
    expect(signedIn).toEqual({ status: 'signed-in', sessionId: expect.any(String) });
    await call('DELETE', '/dashboard/auth/contacts/{id}', 200, { params: { id: linked.contact.id } });
  });

  it('logs out', async () => {
    await call('POST', '/dashboard/auth/logout', 200, { body: { all: true } });
  });

  it('covered every success answer the document declares but the pending invite link', () => {
    const declared = Object.entries(document.paths).flatMap(([route, methods]) =>
      Object.entries(methods).flatMap(([method, operation]) =>
        Object.keys(operation.responses)
          .filter((status) => /^[23]/.test(status))
          .map((status) => `${method.toUpperCase()} ${route} ${status}`),
      ),
    );
    expect(declared.filter((answer) => !checked.has(answer)).sort()).toEqual(['POST /dashboard/group/invite-link 202']);
  });
});
