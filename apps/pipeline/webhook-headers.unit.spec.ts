import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { AppView } from '../../projections/apps/apps-projection.ts';
import { webhookHeaders } from './webhook-dispatcher.ts';

const app = (settings: Record<string, unknown> = {}) => ({ settings: { webhookAuthType: null, webhookAuthHeaderName: null, ...settings } }) as unknown as AppView;
const now = new Date(); // the receiver checks the timestamp against its clock
const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

describe('webhook signatures', () => {
  it('are Standard Webhooks signatures that the official library verifies with its default settings, and a hand-written check too', () => {
    const secret = whsec();
    const body = '{"content":"hello"}';
    const headers = webhookHeaders(app(), { auth: null, signing: [secret] }, 'msg_1', body, now);
    expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
    // From the specification: base64 HMAC-SHA256 of "id.timestamp.body" keyed with the decoded secret.
    const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`msg_1.${headers['webhook-timestamp']}.${body}`).digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${expected}`);
  });

  it('sign with both secrets while a rotation overlaps, and keep the bearer secret apart from the signing one', () => {
    const [current, previous] = [whsec(), whsec()];
    const headers = webhookHeaders(app({ webhookAuthType: 'bearer' }), { auth: 'bearer-token-1', signing: [current, previous] }, 'msg_2', '{}', now);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) expect(() => new Webhook(secret).verify('{}', headers)).not.toThrow();
    expect(headers.authorization).toBe('Bearer bearer-token-1');
    expect(JSON.stringify(headers)).not.toContain(current.slice(6, 20));
  });

  it('of an app without a signing secret (made before them) are keyed with the UTF-8 bytes of its auth secret, so that two secrets never sign alike', () => {
    const signed = (secret: string) => webhookHeaders(app(), { auth: secret, signing: [] }, 'm1', '{"a":1}', now);
    const headers = signed('ü-secret');
    expect(() => new Webhook(Buffer.from('ü-secret', 'utf8'), { format: 'raw' }).verify('{"a":1}', headers)).not.toThrow();
    // 'ü' (U+00FC) and 'Ǽ' (U+01FC) share their low byte: keyed that way they signed alike.
    expect(signed('Ǽ-secret')['webhook-signature']).not.toBe(headers['webhook-signature']);
  });
});
