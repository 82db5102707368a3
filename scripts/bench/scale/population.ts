/**
 * The accounts of the scale bench, written as the account API writes them (the routes under
 * apps/account/routes): each user signs in by e-mail (`signin-*`: requested, completed; `user-*`:
 * registered, a session), makes its apps on the three messengers (`AppCreated` with the sealed
 * Standard Webhooks signing secret of a webhook app, `AppMessengerAdded` ×3), which the provisioner
 * gives bot identities as the simulator connector makes them (`AppMessengerProvisioned`,
 * `AppMessengerStatusChanged`, correlated with the event that asked), and its API keys and webhook
 * credentials (`CredentialCreated`: key hash, sealed secret, preview). The commands are the routes'
 * commands, decided by the domain's deciders (writer.ts), at the start of the simulated history.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { appDecider, appStreamName, type AppState } from '../../../domain/app/decider.ts';
import { newAppSettings } from '../../../domain/app/events.ts';
import { credentialDecider, credentialStreamName } from '../../../domain/credential/decider.ts';
import { MESSENGERS, type Messenger } from '../../../domain/shared/messengers.ts';
import { signInDecider, signInStreamName } from '../../../domain/signin/decider.ts';
import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { userIdForEmail } from '../../../apps/commands/start-session.ts';
import { generateApiKey, hashKey, keyPreview } from '../../../infra/crypto/keys.ts';
import type { SecretBox } from '../../../infra/crypto/secret-box.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { simulatedAddress } from '../../../infra/messenger/simulator/simulator-connector.ts';
import type { ScalePlan, UserPlan } from './plan.ts';
import { decideAndAppend, inPool, type HistoryClock, type Writable } from './writer.ts';

/** What the bench keeps of an app it made: enough to send, receive and group with it later. */
export interface BuiltApp {
  readonly index: number;
  readonly appId: string;
  readonly userId: string;
  readonly messengers: Readonly<Record<Messenger, { readonly id: string; readonly address: string }>>;
  /** A credential of the owner that covers the app (what its sends are recorded as sent by). */
  credentialId: string;
}

/** The probe user's keys, in clear: the request loads present them. */
export interface ProbeKeys {
  readonly oneApp: string;
  readonly allApps: string;
  readonly appIds: readonly string[];
}

export interface Registry {
  readonly apps: Map<number, BuiltApp>;
  probe?: ProbeKeys;
}

export interface PopulationSettings {
  readonly maxAppsPerUser: number;
  readonly maxCredentialsPerUser: number;
  readonly sessionTtlHours: number;
  readonly signInLinkTtlSeconds: number;
  readonly webhookSecretOverlapHours: number;
}

const MINUTE = 60_000;

/** Makes the users `from`…`to-1` of the plan with everything they own; returns how many events it appended. */
export const writePopulation = async (
  deps: { store: Writable; secrets: SecretBox; plan: ScalePlan; clock: HistoryClock; settings: PopulationSettings; registry: Registry; concurrency: number },
  from: number,
  to: number,
): Promise<void> => {
  await inPool(deps.plan.users.slice(from, to), deps.concurrency, (user) => writeUser(deps, user));
};

const writeUser = async (
  deps: { store: Writable; secrets: SecretBox; plan: ScalePlan; clock: HistoryClock; settings: PopulationSettings; registry: Registry },
  user: UserPlan,
): Promise<void> => {
  const { store, secrets, clock, settings } = deps;
  // Users arrive over the history's first hours, a second apart; each one's steps minutes apart.
  const t0 = user.index * 1000;
  const at = (minutes: number) => clock.early(t0 + minutes * MINUTE);
  const email = `user${user.index}@scale.example`;
  const userId = userIdForEmail(email);

  // POST /dashboard/auth/email, then the link posted from the page it opens.
  const signInId = newId.signIn();
  const secretHash = hashKey(randomBytes(32).toString('base64url'));
  const signIn = await decideAndAppend(
    store,
    signInStreamName(signInId),
    signInDecider,
    { type: 'RequestEmailSignIn', data: { signInId, email, secretHash, expiresAt: new Date(at(0).getTime() + settings.signInLinkTtlSeconds * 1000), now: at(0) } },
    { actor: 'anonymous', correlationId: randomUUID() },
    { at: at(0) },
  );
  const completion = { actor: 'anonymous', correlationId: randomUUID() };
  await decideAndAppend(store, signInStreamName(signInId), signInDecider, { type: 'CompleteEmailSignIn', data: { secretHash, userId, now: at(1) } }, completion, {
    at: at(1),
    state: signIn.state,
    version: signIn.version,
  });
  const registered = await decideAndAppend(store, userStreamName(userId), userDecider, { type: 'RegisterUser', data: { userId, email, name: email.split('@')[0]!, now: at(1) } }, completion, { at: at(1) });
  await decideAndAppend(
    store,
    userStreamName(userId),
    userDecider,
    { type: 'StartSession', data: { sessionId: newId.session(), tokenHash: hashKey(`rls_${randomBytes(32).toString('base64url')}`), expiresAt: new Date(at(1).getTime() + settings.sessionTtlHours * 3_600_000), now: at(1) } },
    completion,
    { at: at(1), state: registered.state, version: registered.version },
  );

  // POST /apps, one after the other (each counts the user's live apps), and their provisioning.
  const made: BuiltApp[] = [];
  for (const [n, index] of user.apps.entries()) {
    const plan = deps.plan.apps[index]!;
    const appId = newId.app();
    const ids = Object.fromEntries(MESSENGERS.map((m) => [m, newId.appMessenger()])) as Record<Messenger, string>;
    const signing = `whsec_${randomBytes(32).toString('base64')}`;
    const settingsOf = newAppSettings(
      `App ${index}`,
      [...MESSENGERS],
      plan.webhook ? { deliveryType: 'webhook', webhookUrl: `https://hooks.scale.example/relay/${index}` } : {},
    );
    const created = await decideAndAppend(
      store,
      appStreamName(appId),
      appDecider,
      {
        type: 'CreateApp',
        data: {
          appId,
          userId,
          settings: settingsOf,
          appMessengerIds: ids,
          liveApps: n,
          maxPerUser: settings.maxAppsPerUser,
          signingSecret: { encrypted: secrets.encrypt(signing), rotate: false, overlapMs: settings.webhookSecretOverlapHours * 3_600_000 },
          now: at(2 + n),
        },
      },
      { actor: `user:${userId}`, correlationId: randomUUID() },
      { at: at(2 + n) },
    );
    // The provisioner: one command per AppMessengerAdded, correlated with that event's id.
    let state: AppState = created.state;
    let version = created.version;
    for (const [k, event] of created.events.entries()) {
      if (event.type !== 'AppMessengerAdded') continue;
      const { appMessengerId, messenger } = event.data;
      const provisioned = await decideAndAppend(
        store,
        appStreamName(appId),
        appDecider,
        { type: 'ProvisionAppMessenger', data: { appMessengerId, address: simulatedAddress(messenger, appMessengerId), now: at(2 + n) } },
        { actor: 'system:gateway', correlationId: created.ids[k]! },
        { at: at(2 + n), state, version },
      );
      state = provisioned.state;
      version = provisioned.version;
    }
    const messengers = Object.fromEntries(MESSENGERS.map((m) => [m, { id: ids[m], address: simulatedAddress(m, ids[m]) }])) as BuiltApp['messengers'];
    const built: BuiltApp = { index, appId, userId, messengers, credentialId: '' };
    made.push(built);
    deps.registry.apps.set(index, built);
  }

  // POST /credentials: the first covers every app of the user, the others one app each; now and
  // then a webhook credential (bearer, or a header of the receiver's choosing).
  const appIds = made.map((a) => a.appId);
  const secretsShown: string[] = [];
  for (let c = 0; c < user.credentials; c++) {
    const secret = generateApiKey();
    const credentialId = newId.credential();
    const kind = user.index === 0 ? 'api-key' : c > 0 && (user.index + c) % 50 === 0 ? 'webhook-header' : c > 0 && (user.index + c) % 20 === 0 ? 'webhook-bearer' : 'api-key';
    const covered = user.index === 0 ? (c === 0 ? appIds.slice(0, 1) : appIds) : c === 0 ? appIds : [appIds[(c - 1) % appIds.length]!];
    const now = at(3 + user.apps.length + c);
    await decideAndAppend(
      store,
      credentialStreamName(credentialId),
      credentialDecider,
      {
        type: 'CreateCredential',
        data: {
          credentialId,
          userId,
          type: kind,
          name: `key ${c}`,
          appIds: covered,
          ownedAppIds: appIds,
          liveCredentials: c,
          maxPerUser: settings.maxCredentialsPerUser,
          keyHash: hashKey(secret),
          secretEncrypted: secrets.encrypt(secret),
          keyPreview: keyPreview(secret),
          webhookUrl: kind === 'api-key' ? null : `https://receiver.scale.example/${user.index}/${c}`,
          webhookAuthType: kind === 'api-key' ? null : kind === 'webhook-bearer' ? 'bearer' : 'header',
          webhookAuthHeaderName: kind === 'webhook-header' ? 'X-Relay-Token' : null,
          now,
        },
      },
      { actor: `user:${userId}`, correlationId: randomUUID() },
      { at: now },
    );
    secretsShown.push(secret);
    if (kind === 'api-key') for (const app of made) if (app.credentialId === '' && covered.includes(app.appId)) app.credentialId = credentialId;
  }
  if (user.index === 0) deps.registry.probe = { oneApp: secretsShown[0]!, allApps: secretsShown[1]!, appIds };
};
