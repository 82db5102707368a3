/**
 * One app: each app-messenger's bot address (a QR code for SimpleX and Session addresses),
 * status and health, enabling and disabling it, delivery by poll or webhook (the signing secret
 * shown once), the group of each app-messenger, and deleting the app.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { BASE, navigate } from '../router';
import { ErrorNote, Loading, Qr, SecretOnce } from '../ui';
import { Group } from './group';
import { SignalLink } from './signal-link';

type App = components['schemas']['App'];
type AppMessenger = components['schemas']['AppMessenger'];

const NAMES = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' } as const;
const HEALTH = { ok: 'healthy', 'daemon-unreachable': 'the messenger daemon cannot be reached', 'account-missing': 'the bot’s account is missing from the daemon' } as const;

export const AppDetail = (props: { appId: string; onFailure: (failure: Failure) => void }) => {
  const [app, setApp] = useState<App | null | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [signingSecret, setSigningSecret] = useState<string | undefined>();

  const load = async () => {
    const outcome = await run(api.GET('/dashboard/api/dashboard/apps'));
    if (outcome.ok) setApp(outcome.data.items.find((a) => a.id === props.appId) ?? null);
    else (outcome.failure.signedOut ? props.onFailure : setFailure)(outcome.failure);
  };
  useEffect(() => void load(), [props.appId]);

  if (app === undefined) return failure ? <ErrorNote failure={failure} onRetry={load} /> : <Loading />;
  if (app === null)
    return (
      <section>
        <h1>App not found</h1>
        <p>
          There is no app of yours with this id. <a href={`${BASE}/apps`}>Back to your apps</a>.
        </p>
      </section>
    );

  const setStatus = async (messenger: AppMessenger, status: 'active' | 'disabled') => {
    setFailure(undefined);
    const outcome = await run(api.PUT('/dashboard/api/dashboard/app-messengers/{id}', { params: { path: { id: messenger.id } }, body: { status } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    await load();
  };

  const remove = async () => {
    if (!confirm(`Delete the app “${app.name}”? Its API keys stop working for it at once.`)) return;
    const outcome = await run(api.DELETE('/dashboard/api/dashboard/apps/{appId}', { params: { path: { appId: app.id } } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    navigate(`${BASE}/apps`);
  };

  return (
    <section aria-labelledby="app-name">
      <h1 id="app-name">{app.name}</h1>
      <p class="muted">
        appId <code>{app.id}</code>
      </p>
      <ErrorNote failure={failure} onRetry={load} />
      <h2>Messengers</h2>
      <table data-messengers>
        <thead>
          <tr>
            <th scope="col">Messenger</th>
            <th scope="col">Bot address</th>
            <th scope="col">Status</th>
            <th scope="col">Health</th>
            <th scope="col">
              <span class="visually-hidden">Change</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {app.messengers.map((m) => (
            <tr key={m.id} data-messenger={m.messenger}>
              <th scope="row">{NAMES[m.messenger]}</th>
              <td>{m.address ? <code>{m.address}</code> : <span class="muted">not provisioned yet</span>}</td>
              <td data-status>{m.status}</td>
              <td data-health>
                {HEALTH[m.health]}
                {m.healthReason && <span class="muted"> ({m.healthReason})</span>}
              </td>
              <td>
                {m.status === 'active' && (
                  <button type="button" onClick={() => setStatus(m, 'disabled')}>
                    Disable {NAMES[m.messenger]}
                  </button>
                )}
                {m.status === 'disabled' && (
                  <button type="button" onClick={() => setStatus(m, 'active')}>
                    Enable {NAMES[m.messenger]}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {app.messengers
        .filter((m) => m.address && m.messenger !== 'signal')
        .map((m) => (
          <Qr key={m.id} text={m.address!} label={`QR code of the ${NAMES[m.messenger]} bot's address`} />
        ))}
      {app.messengers
        .filter((m) => m.messenger === 'signal' && m.address === null)
        .map((m) => (
          <SignalLink key={m.id} appMessengerId={m.id} onLinked={load} />
        ))}
      <Delivery
        app={app}
        onSaved={(saved, secret) => {
          setApp(saved);
          setSigningSecret(secret);
        }}
        onFailure={setFailure}
      />
      {signingSecret && <SecretOnce label="Webhook signing secret" secret={signingSecret} />}
      {app.messengers.map((m) => (
        <Group key={m.id} messenger={m} name={NAMES[m.messenger]} />
      ))}
      <h2>Delete</h2>
      <button type="button" class="danger" onClick={remove}>
        Delete this app
      </button>
    </section>
  );
};

const Delivery = (props: { app: App; onSaved: (app: App, signingSecret: string | undefined) => void; onFailure: (failure: Failure | undefined) => void }) => {
  const { app } = props;
  const [type, setType] = useState(app.deliveryType);
  const [url, setUrl] = useState(app.webhookUrl ?? '');
  const [authType, setAuthType] = useState<'none' | 'bearer' | 'header'>(app.webhookAuthType ?? 'none');
  const [secret, setSecret] = useState('');
  const [header, setHeader] = useState(app.webhookAuthHeaderName ?? '');

  const save = async (event: Event, rotate = false) => {
    event.preventDefault();
    props.onFailure(undefined);
    const webhook =
      type === 'webhook'
        ? {
            webhookUrl: url,
            webhookAuthType: authType === 'none' ? null : authType,
            ...(secret ? { webhookAuthSecret: secret } : {}),
            ...(authType === 'header' ? { webhookAuthHeaderName: header } : {}),
          }
        : {};
    const outcome = await run(api.POST('/dashboard/api/dashboard/apps/update', { body: { appId: app.id, deliveryType: type, ...webhook, ...(rotate ? { rotateWebhookSigningSecret: true } : {}) } }));
    if (!outcome.ok) return props.onFailure(outcome.failure);
    setSecret('');
    props.onSaved(outcome.data, outcome.data.webhookSigningSecret);
  };

  return (
    <form onSubmit={(e) => save(e)} aria-labelledby="delivery">
      <h2 id="delivery">Delivery</h2>
      <fieldset>
        <legend>How your bot gets what contacts write</legend>
        <label class="inline">
          <input type="radio" name="delivery" value="poll" checked={type === 'poll'} onChange={() => setType('poll')} /> Poll (<code>GET /api/v1/messages/poll</code>)
        </label>
        <label class="inline">
          <input type="radio" name="delivery" value="webhook" checked={type === 'webhook'} onChange={() => setType('webhook')} /> Webhook (Relay posts each message to your URL)
        </label>
      </fieldset>
      {type === 'webhook' && (
        <>
          <label for="webhook-url">Webhook URL</label>
          <input id="webhook-url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
          <label for="webhook-auth">How Relay authenticates to your URL</label>
          <select id="webhook-auth" value={authType} onChange={(e) => setAuthType((e.target as HTMLSelectElement).value as 'none' | 'bearer' | 'header')}>
            <option value="none">Only the signature</option>
            <option value="bearer">Bearer token</option>
            <option value="header">A header of your choice</option>
          </select>
          {authType === 'header' && (
            <>
              <label for="webhook-header">Header name</label>
              <input id="webhook-header" required value={header} onInput={(e) => setHeader((e.target as HTMLInputElement).value)} />
            </>
          )}
          {authType !== 'none' && (
            <>
              <label for="webhook-secret">{app.hasWebhookAuthSecret ? 'New secret (leave empty to keep the one set)' : 'Secret'}</label>
              <input id="webhook-secret" type="password" autocomplete="off" value={secret} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} />
            </>
          )}
          <p class="muted">
            Deliveries are signed the Standard Webhooks way.{' '}
            {app.hasWebhookSigningSecret ? 'The signing secret was shown when it was made.' : 'Relay makes the signing secret when you save, and shows it once.'}
          </p>
        </>
      )}
      <button type="submit">Save delivery</button>
      {type === 'webhook' && app.hasWebhookSigningSecret && (
        <button type="button" onClick={(e) => save(e, true)}>
          Rotate the signing secret
        </button>
      )}
    </form>
  );
};
