import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { AppView } from '../../projections/apps/apps-projection.ts';
import { webhookHeaders } from './webhook-dispatcher.ts';

const app = { settings: { webhookAuthType: null, webhookAuthHeaderName: null } } as unknown as AppView;
const now = new Date(); // the receiver checks the timestamp against its clock

describe('webhook signatures', () => {
  it('are keyed with the UTF-8 bytes of the secret: a receiver keyed alike verifies, and two secrets never sign alike', () => {
    const signed = (secret: string) => webhookHeaders(app, secret, 'm1', '{"a":1}', now);
    const headers = signed('ü-secret');
    expect(() => new Webhook(Buffer.from('ü-secret', 'utf8'), { format: 'raw' }).verify('{"a":1}', headers)).not.toThrow();
    // 'ü' (U+00FC) and 'Ǽ' (U+01FC) share their low byte: keyed that way they signed alike.
    expect(signed('Ǽ-secret')['webhook-signature']).not.toBe(headers['webhook-signature']);
  });
});
