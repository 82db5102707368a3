/**
 * One app: each app-messenger's bot address (a QR code for SimpleX and Session addresses),
 * status and health, enabling and disabling it, delivery by poll or webhook (the signing secret
 * shown once), the group of each app-messenger, and deleting the app. Status and health follow
 * by themselves: the app is read again every few seconds while the page is seen.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { SIMULATED } from '../install';
import { BASE, navigate } from '../router';
import { ErrorNote, Loading, Qr, SecretOnce, TableHead } from '../ui';
import { APP_REFRESH_MS, useWhileVisible } from '../visible';
import { MessageLog } from './message-log';
import { Quickstart } from './quickstart';
import { TestMessage } from './test-message';
import { Delivery } from './delivery';
import { Group } from './group';
import { SignalLink } from './signal-link';

type App = components['schemas']['App'];
type AppMessenger = components['schemas']['AppMessenger'];

const NAMES = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' } as const;
const HEALTH = { ok: 'healthy', 'daemon-unreachable': 'the messenger daemon cannot be reached', 'account-missing': 'the bot’s account is missing from the daemon' } as const;
const STATUS = { processing: 'being set up', active: 'active', disabled: 'disabled' } as const;

export const AppDetail = (props: { appId: string; onFailure: (failure: Failure) => void }) => {
  const [app, setApp] = useState<App | null | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [signingSecret, setSigningSecret] = useState<string | undefined>();

  const load = async (quietly = false) => {
    const outcome = await run(api.GET('/dashboard/api/dashboard/apps'));
    if (outcome.ok) setApp(outcome.data.items.find((a) => a.id === props.appId) ?? null);
    else if (outcome.failure.signedOut) props.onFailure(outcome.failure);
    else if (!quietly) setFailure(outcome.failure);
  };
  useEffect(() => void load(), [props.appId]);
  // A read that fails now and then is not shown: the next one follows soon.
  useWhileVisible(() => void load(true), APP_REFRESH_MS);

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
        appId <code>{app.id}</code> · <a href={`${BASE}/keys?app=${encodeURIComponent(app.id)}`}>Make an API key for this app</a>
      </p>
      <ErrorNote failure={failure} onRetry={load} />
      <h2>Messengers</h2>
      <table data-messengers>
        <TableHead columns={['Messenger', 'Bot address', 'Status', 'Health']} actions="Change" />
        <tbody>
          {app.messengers.map((m) => (
            <tr key={m.id} data-messenger={m.messenger}>
              <th scope="row">{NAMES[m.messenger]}</th>
              <td data-label="Bot address">{m.address ? <code>{m.address}</code> : <span class="muted">{addressPending(m)}</span>}</td>
              <td data-label="Status" data-status={m.status}>
                {STATUS[m.status]}
              </td>
              <td data-label="Health" data-health>
                {HEALTH[m.health]}
                {m.healthReason && <span class="muted"> ({m.healthReason})</span>}
              </td>
              <td data-label="Change">
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
          <section key={m.id} aria-labelledby={`qr-${m.id}`} data-bot-qr={m.messenger}>
            <h3 id={`qr-${m.id}`}>{NAMES[m.messenger]}: scan to write to the bot</h3>
            <Qr text={m.address!} label={`QR code of the ${NAMES[m.messenger]} bot's address`} />
          </section>
        ))}
      {app.messengers
        .filter((m) => m.messenger === 'signal' && m.address === null && !SIMULATED.includes('signal'))
        .map((m) => (
          <SignalLink key={m.id} appMessengerId={m.id} onChanged={() => load(true)} />
        ))}
      <Delivery
        app={app}
        onSaved={(saved, secret) => {
          setApp(saved);
          setSigningSecret(secret);
        }}
      />
      {signingSecret && <SecretOnce label="Webhook signing secret" secret={signingSecret} />}
      <Quickstart app={app} />
      <TestMessage app={app} />
      <MessageLog app={app} />
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

/** What stands in for a bot address not there yet: the simulator makes one at once, a Signal daemon's bot is linked or bound. */
const addressPending = (m: AppMessenger) =>
  m.messenger === 'signal' && !SIMULATED.includes('signal') ? 'no Signal account yet: link one below' : 'being set up…';
