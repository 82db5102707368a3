import { z } from 'zod';
import { CREDENTIAL_TYPES } from '../../domain/credential/events.ts';
import { GROUP_OPERATIONS, type GroupOperation } from '../../domain/group/events.ts';
import type { CodeRefusal } from '../../domain/messenger-code/events.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import { ALERT_CATEGORIES, ALERT_CHANNELS, type AlertCategory, type AlertChannel } from '../../domain/user/notification-preferences.ts';

/**
 * The success answers of the account API (the billing ones are in billing-schemas.ts), declared on
 * every route for `/docs/account.json`: a generated client reads `app.id`, an app-messenger's `id`
 * or a credential's `secret` without a cast. The views (views.ts) and the routes are typed with
 * these shapes, so an answer cannot drift from its schema without the compiler saying so; answers
 * are written as they are (app.ts), never filtered through a schema. Errors keep the interface's
 * `{ success: false, error }` (openapi-shape.ts adds it to every operation).
 */

const time = z.string().describe('ISO 8601');

/** `{ success: true, data }`: the interface's shape of the answers that report an outcome. */
const done = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

export const userResponse = z.object({ id: z.string(), name: z.string(), email: z.string() }).meta({ id: 'User' });

export const appMessengerResponse = z
  .object({
    id: z.string().describe("The app-messenger's own id (`appMessengerId` of the group routes), not the appId"),
    appId: z.string(),
    messenger: z.enum(MESSENGERS),
    status: z.enum(['processing', 'active', 'disabled']).describe('processing until its bot identity exists (system-only); then active or disabled'),
    address: z.string().nullable().describe("The bot's address on the messenger (null until provisioned)"),
    health: z.enum(['ok', 'daemon-unreachable', 'account-missing']),
    healthReason: z.string().nullable().describe('Why the health is not ok'),
  })
  .meta({ id: 'AppMessenger' });

export const appResponse = z
  .object({
    id: z.string().describe('The appId'),
    name: z.string(),
    protocol: z.array(z.enum(MESSENGERS)),
    status: z.enum(['active', 'disabled']),
    deliveryType: z.enum(['poll', 'webhook']),
    webhookUrl: z.string().nullable(),
    webhookAuthType: z.enum(['bearer', 'header']).nullable(),
    webhookAuthHeaderName: z.string().nullable(),
    hasWebhookAuthSecret: z.boolean().describe('Whether a webhookAuthSecret is set (it is never shown)'),
    hasWebhookSigningSecret: z.boolean().describe('Whether the app has a Standard Webhooks signing secret'),
    webhookPreviousSigningSecretUntil: time.nullable().describe('Until when the signing secret replaced by the last rotation still signs (null: none does)'),
    apiKeyId: z.string().nullable(),
    userId: z.string(),
    createdAt: time,
    messengers: z.array(appMessengerResponse),
  })
  .meta({ id: 'App' });

/** An app just created or changed: with its new webhook signing secret when one was made, shown this once. */
export const savedAppResponse = appResponse
  .extend({ webhookSigningSecret: z.string().optional().describe('`whsec_…`, present only when this request made one: shown once') })
  .meta({ id: 'SavedApp' });

export const appListResponse = z.object({ items: z.array(appResponse) }).meta({ id: 'AppList' });

export const deletedAppResponse = done(z.object({ id: z.string(), deleted: z.literal(true) }));

export const credentialResponse = z
  .object({
    credentialId: z.string(),
    type: z.enum(CREDENTIAL_TYPES),
    name: z.string(),
    appIds: z.array(z.string()),
    keyPreview: z.string().describe('The first characters of the key, for display'),
    webhookUrl: z.string().nullable(),
    webhookAuthType: z.string().nullable().describe('bearer or header (webhook credentials)'),
    webhookAuthHeaderName: z.string().nullable(),
    createdAt: time,
  })
  .meta({ id: 'Credential' });

export const credentialWithSecretResponse = credentialResponse
  .extend({ secret: z.string().describe('The key: `Authorization: Bearer <secret>` on the public API') })
  .meta({ id: 'CredentialWithSecret' });

export const credentialListResponse = z.object({ items: z.array(credentialResponse) }).meta({ id: 'CredentialList' });
export const credentialWithSecretListResponse = z.object({ items: z.array(credentialWithSecretResponse) }).meta({ id: 'CredentialWithSecretList' });

export const deletedCredentialResponse = done(z.object({ credentialId: z.string(), deleted: z.literal(true) }));

// --- groups (docs/groups.md) ---

const memberOperation = z.enum(['add-member', 'remove-member', 'promote-admin', 'demote-admin'] as const satisfies readonly GroupOperation[]);

export const groupMembersResponse = z
  .object({
    appMessengerId: z.string(),
    messenger: z.enum(MESSENGERS),
    groupId: z.string().nullable().describe('The group on the messenger (null until made)'),
    members: z.array(z.object({ contactId: z.string(), role: z.enum(['admin', 'member']), status: z.enum(['joined', 'invited']) })),
    memberCount: z.number().int(),
    syncedAt: time.nullable(),
    changes: z
      .array(
        z.object({
          requestId: z.string(),
          operation: z.enum(GROUP_OPERATIONS),
          status: z.enum(['pending', 'done', 'failed']),
          reason: z.string().optional().describe('The messenger’s reason (failed only)'),
        }),
      )
      .describe('The latest requests, oldest first, with what became of each'),
  })
  .meta({ id: 'GroupMembers' });

export const groupInviteLinkResponse = z
  .object({ appMessengerId: z.string(), messenger: z.enum(MESSENGERS), groupId: z.string(), inviteLink: z.string() })
  .meta({ id: 'GroupInviteLink' });

/** `GET /group/invite-link` reads only: null until the link is turned on (and the group id until the group is made). */
export const groupInviteLinkReadResponse = z
  .object({ appMessengerId: z.string(), messenger: z.enum(MESSENGERS), groupId: z.string().nullable(), inviteLink: z.string().nullable().describe('null until turned on with POST /dashboard/group/invite-link') })
  .meta({ id: 'GroupInviteLinkRead' });

/** 202: the messenger had not answered within GROUP_CHANGE_WAIT_MS; the change goes on (GET /group/members lists it). */
export const pendingInviteLinkResponse = done(
  z.object({ requestId: z.string(), appMessengerId: z.string(), operation: z.literal('invite-link'), status: z.literal('pending') }),
).describe('The messenger has not answered yet: the invite link is made meanwhile');

const memberChange = <S extends 'done' | 'pending'>(status: S) =>
  done(z.object({ requestId: z.string(), appMessengerId: z.string(), operation: memberOperation, contactId: z.string(), status: z.literal(status) }));

export const groupChangeDoneResponse = memberChange('done').describe('The messenger carried the change out');
export const groupChangePendingResponse = memberChange('pending').describe('The messenger has not answered yet: the change goes on (GET /group/members lists it)');

// --- the account's own settings ---

export const recoveryCodeResponse = done(z.object({ recoveryCode: z.string().describe('Shown this once'), generatedAt: time }));

const categoryToggles = z.object(Object.fromEntries(ALERT_CATEGORIES.map((category) => [category, z.boolean()])) as Record<AlertCategory, z.ZodBoolean>);

export const notificationPreferencesResponse = z
  .object({
    categories: z.array(z.enum(ALERT_CATEGORIES)),
    channels: z.array(z.enum(ALERT_CHANNELS)),
    preferences: z.object(Object.fromEntries(ALERT_CHANNELS.map((channel) => [channel, categoryToggles])) as Record<AlertChannel, typeof categoryToggles>),
  })
  .meta({ id: 'NotificationPreferences' });

// --- /dashboard/auth: sessions, sign-in, linked contacts ---

export const logoutResponse = done(z.object({ ended: z.number().int().describe('How many sessions ended') }));

export const sessionListResponse = z.object({
  items: z.array(z.object({ sessionId: z.string(), startedAt: time, expiresAt: time, current: z.boolean().describe('The session of this request') })),
});

export const endedSessionResponse = done(z.object({ sessionId: z.string(), ended: z.boolean() }));

export const emailSignInResponse = done(z.object({ expiresAt: time.describe('Until when the link mailed works') })).describe('The link is mailed (whether or not the address has an account)');

export const recoveredResponse = done(z.object({ signedIn: z.literal(true), sessionId: z.string() })).describe('Signed in: the relay_session cookie is set');

/** A followed sign-in link answers 303 to the page that finishes it, or to /dashboard?signin=<why>: its body only repeats that. */
export const signInLinkResponse = z
  .union([done(z.object({ signedIn: z.literal(false) })), z.object({ success: z.literal(false), error: z.enum(['invalid', 'expired', 'used']) })])
  .describe('A redirect (Location): to /dashboard/sign-in#<link>, whose button signs in (POST), or to /dashboard?signin=<why> (invalid, expired, used); a GET never signs in');

export const messengerSignInStartedResponse = done(
  z.object({
    code: z.string(),
    command: z.string().describe('What to send to a Relay bot: /signin CODE'),
    pollToken: z.string().describe('What GET /dashboard/auth/messenger/{pollToken} is followed with'),
    expiresAt: time,
  }),
).describe('The code to send as /signin CODE from a linked contact');

const codeNotSent = z.object({ status: z.literal('pending'), expiresAt: time.optional().describe('Until when the code can be sent') }).describe('The code was not sent yet');

/** GET: what became of the code (a GET never signs in: issue 47). */
export const messengerSignInStatusResponse = done(
  z.union([codeNotSent, z.object({ status: z.literal('confirmed'), expiresAt: time }).describe('A linked contact sent the code: the POST of the browser that asked signs in')]),
);

/** POST (same-origin): pending, or signed in once. */
export const messengerSignInResponse = done(
  z.union([codeNotSent, z.object({ status: z.literal('signed-in'), sessionId: z.string() }).describe('Signed in, once: the relay_session cookie is set')]),
);

export const linkCodeResponse = done(
  z.object({ linkId: z.string(), code: z.string(), command: z.string().describe('What the contact sends to a Relay bot: /link CODE'), expiresAt: time }),
).describe('The code to send as /link CODE from the messenger contact to link');

export const linkStatusResponse = done(
  z.object({
    linkId: z.string(),
    status: z.enum(['pending', 'linked', 'expired', 'refused']).describe('refused: a contact sent the code and was refused in a way that ends it (linked to another account, or over its attempt limit)'),
    expiresAt: time,
    contact: z.object({ id: z.string(), messenger: z.enum(MESSENGERS), linkedAt: time }).optional().describe('The contact linked (linked only)'),
    refused: z.array(z.enum(['expired', 'used', 'contact-not-linked', 'contact-linked-elsewhere', 'throttled'] as const satisfies readonly CodeRefusal[])).describe('Why a contact that sent the code was refused'),
  }),
);

export const contactListResponse = z.object({
  items: z.array(z.object({ id: z.string(), messenger: z.enum(MESSENGERS), contactId: z.string(), linkedAt: time })),
});

export const unlinkedContactResponse = done(z.object({ id: z.string(), unlinked: z.literal(true) }));

export type AppJson = z.output<typeof appResponse>;
export type AppMessengerJson = z.output<typeof appMessengerResponse>;
export type CredentialJson = z.output<typeof credentialResponse>;
