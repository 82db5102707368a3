import { z } from 'zod';
import { CREDENTIAL_TYPES } from '../../domain/credential/events.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import { TEXT_LIMITS } from '../../domain/shared/text.ts';
import { webhookUrlProblem, type WebhookUrlPolicy } from '../../infra/net/public-address.ts';
import { boundedText } from './validation.ts';

/**
 * The bodies of the account API, validated by Fastify before a handler runs (see validation.ts)
 * and documented in `/docs/account.json`. Every free-text field has a cap (docs/limits.md).
 */

const name = (missing: string) => z.string().trim().min(1, missing).superRefine(boundedText('Name', TEXT_LIMITS.name, true));

const protocol = z.array(z.enum(MESSENGERS, { error: `Invalid protocol. Must be an array of: ${MESSENGERS.join(', ')}` }), {
  error: (issue) => (issue.input === undefined ? undefined : `Invalid protocol. Must be an array of: ${MESSENGERS.join(', ')}`),
});

/** An id the client names (app, credential, app-messenger): never longer than ours. */
const id = (missing: string) => z.string().min(1, missing).max(64, missing.replace('Missing required field', 'Invalid'));

const webhookUrl = (policy: WebhookUrlPolicy) =>
  z
    .string()
    .max(TEXT_LIMITS.webhookUrl, `Invalid webhookUrl: must be at most ${TEXT_LIMITS.webhookUrl} characters`)
    .superRefine((value, ctx) => {
      const problem = webhookUrlProblem(value, policy);
      if (problem) ctx.addIssue({ code: 'custom', message: `Invalid webhookUrl: ${problem}` });
    });

const headerName = z.string().trim().max(TEXT_LIMITS.headerName, `Invalid webhookAuthHeaderName: must be at most ${TEXT_LIMITS.headerName} characters`);
/**
 * Sent as an HTTP header value (`Authorization: Bearer …` or the named header): printable ASCII only.
 * Node refuses to send a character above U+00FF at all, and sends U+0080–U+00FF as bytes a receiver
 * reading UTF-8 cannot match (issue 23): such a value is refused when it is saved.
 */
const secret = z
  .string()
  .superRefine(boundedText('webhookAuthSecret', TEXT_LIMITS.webhookSecret, true))
  .refine((value) => /^[\x20-\x7e]*$/.test(value), 'Invalid webhookAuthSecret: must be printable ASCII characters (it is sent in an HTTP header)');

export const renameUserBody = z.object({ name: name('Missing required field: name') });

export const appBodies = (policy: WebhookUrlPolicy) => {
  const settings = {
    status: z.enum(['active', 'disabled'], { error: 'Invalid status. Must be one of: active, disabled' }).optional(),
    deliveryType: z.enum(['poll', 'webhook'], { error: 'Invalid deliveryType. Must be one of: poll, webhook' }).optional(),
    webhookUrl: webhookUrl(policy).nullable().optional(),
    webhookAuthType: z.enum(['bearer', 'header'], { error: 'Invalid webhookAuthType. Must be one of: bearer, header' }).nullable().optional(),
    webhookAuthSecret: secret.nullable().optional(),
    webhookAuthHeaderName: headerName.nullable().optional(),
    apiKeyId: id('Missing required field: apiKeyId').nullable().optional(),
  };
  return {
    create: z.object({ name: name('Missing required field: name'), protocol, ...settings }),
    update: z.object({
      appId: id('Missing required field: appId'),
      name: name('Name is required').optional(),
      protocol: protocol.optional(),
      ...settings,
      /** A new Standard Webhooks signing secret, shown once; the old one signs beside it for WEBHOOK_SECRET_OVERLAP_HOURS. */
      rotateWebhookSigningSecret: z.boolean({ error: 'Invalid rotateWebhookSigningSecret: must be true or false' }).optional(),
    }),
  };
};

export const appMessengerStatusBody = z.object({
  status: z.enum(['active', 'disabled'], {
    error: (issue) => (issue.input === undefined ? undefined : 'Invalid status. Must be one of: active, disabled'),
  }),
});

export const createCredentialBody = (policy: WebhookUrlPolicy) =>
  z.object({
    type: z.enum(CREDENTIAL_TYPES, {
      error: (issue) => (issue.input === undefined ? undefined : `Invalid credential type. Must be one of: ${CREDENTIAL_TYPES.join(', ')}`),
    }),
    appIds: z
      .array(id('Invalid appIds'), { error: (issue) => (issue.input === undefined ? undefined : 'Invalid appIds. Must be an array of app ids') })
      .max(100, 'Invalid appIds: at most 100'),
    name: z.string({ error: (issue) => (issue.input === undefined ? undefined : 'Invalid name') }),
    webhookUrl: webhookUrl(policy).nullable().optional(),
    webhookAuthType: z.enum(['bearer', 'header'], { error: 'Invalid webhookAuthType. Must be one of: bearer, header' }).nullable().optional(),
    webhookAuthHeaderName: headerName.nullable().optional(),
  });

export const logoutBody = z.object({ all: z.boolean({ error: 'Invalid all. Must be true or false' }).optional() });

/** The group routes: the app-messenger whose group it is, and for a change the contact it concerns. */
export const groupQuery = z.object({ appMessengerId: id('Missing required field: appMessengerId') });

export const groupChangeBody = z.object({
  appMessengerId: id('Missing required field: appMessengerId'),
  contactId: z
    .string({ error: (issue) => (issue.input === undefined ? undefined : 'Invalid contactId') })
    .trim()
    .min(1, 'Missing required field: contactId')
    .superRefine(boundedText('ContactId', TEXT_LIMITS.contactId, true)),
});

export const emailSignInBody = z.object({
  email: z.string({ error: (issue) => (issue.input === undefined ? undefined : 'Invalid email: must be an e-mail address') }).max(TEXT_LIMITS.email, 'Invalid email: must be an e-mail address'),
});

export const recoverBody = z.object({
  email: z.string({ error: 'Invalid email or recovery code' }).max(TEXT_LIMITS.email, 'Invalid email or recovery code'),
  code: z.string({ error: 'Invalid email or recovery code' }).max(64, 'Invalid email or recovery code'),
});

/** `POST /invoices`: the interface's `{ asset, planId }`. */
export const createInvoiceBody = z.object({
  asset: z.string({ error: 'Missing required field: asset' }).min(1, 'Missing required field: asset').max(16, 'Unsupported asset'),
  planId: z.string({ error: 'Missing required field: planId' }).min(1, 'Missing required field: planId').max(64, 'Unknown plan'),
});
