/**
 * API keys: the user's credentials (secrets redacted) with their last use, a new one of each type
 * (its secret shown once), rolling one (a new secret shown once, the old one working for a while:
 * key-roll.tsx), deleting one. A new key starts with the app it is asked for ticked (`?app=`), or the only
 * app there is; a key with no app is refused before it is sent.
 */
import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { FieldError, FormError, TextField, useFormErrors, webhookUrlProblem, withinLimits } from '../forms';
import { ErrorNote, Loading, SecretOnce, TableHead, when } from '../ui';
import { LastUsed, LastUsedHint, loadKeyActivity, OldSecretNote, RollKey, type KeyActivity } from './key-roll';

type Credential = components['schemas']['Credential'];
type App = components['schemas']['App'];
type KeyType = Credential['type'];

/** Each type, its name in the list, and what it is for in one line. */
const TYPES: ReadonlyArray<readonly [KeyType, string, string]> = [
  ['api-key', 'API key (Authorization: Bearer or X-API-Key)', 'API key: your bot sends and polls with it, in Authorization: Bearer or X-API-Key.'],
  ['webhook-bearer', 'Webhook key (Authorization: Bearer only)', 'Webhook key (bearer): for a webhook integration at the URL you give; Relay takes it in Authorization: Bearer only.'],
  ['webhook-header', 'Webhook key in a header of your choice', 'Webhook key in a header: the same, for a tool that cannot set Authorization; Relay takes it only in the header you name.'],
];
const FIELDS = { name: 'key-name', webhookUrl: 'key-webhook-url', webhookAuthHeaderName: 'key-header', appIds: 'key-apps' } as const;
/** The account API's limits (domain/shared/text.ts). */
const LIMITS = { name: 100, webhookUrl: 2048, headerName: 64 } as const;

export const Keys = (props: { app: string | null; onFailure: (failure: Failure) => void }) => {
  const [keys, setKeys] = useState<Credential[] | undefined>();
  const [apps, setApps] = useState<App[]>([]);
  const [failure, setFailure] = useState<Failure | undefined>();
  const [made, setMade] = useState<{ name: string; secret: string; until?: string } | undefined>();
  const [activity, setActivity] = useState(new Map<string, KeyActivity>());
  const [rolling, setRolling] = useState<Credential | undefined>();
  const [form, setForm] = useState({ type: 'api-key' as KeyType, name: '', appIds: new Set<string>(), header: '', url: '' });
  const errors = useFormErrors('key', FIELDS);

  const load = async (first = false) => {
    setFailure(undefined);
    const [listed, owned, used] = await Promise.all([run(api.GET('/dashboard/api/dashboard/credentials')), run(api.GET('/dashboard/api/dashboard/apps')), loadKeyActivity()]);
    if (!listed.ok) return (listed.failure.signedOut ? props.onFailure : setFailure)(listed.failure);
    setKeys(listed.data.items);
    setActivity(used);
    if (!owned.ok) return;
    setApps(owned.data.items);
    // The app asked for, or the only one: ticked from the start.
    const start = owned.data.items.find((a) => a.id === props.app) ?? (owned.data.items.length === 1 ? owned.data.items[0] : undefined);
    if (first && start) setForm((f) => ({ ...f, appIds: new Set([start.id]) }));
  };
  useEffect(() => void load(true), []);
  // After a roll the form is gone: the focus goes to what it made.
  useLayoutEffect(() => {
    if (made?.until) document.getElementById('rolled')?.focus();
  }, [made]);

  const create = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    errors.clear();
    setMade(undefined);
    if (form.appIds.size === 0)
      return errors.refuse(FIELDS.appIds, apps.length === 0 ? 'Make an app first: a key works for the apps ticked here.' : 'Tick at least one app: a key works only for the apps ticked here.', apps[0] && `key-app-${apps[0].id}`);
    if (form.type !== 'api-key') {
      const problem = webhookUrlProblem(form.url);
      if (problem) return errors.refuse(FIELDS.webhookUrl, problem);
    }
    const limited = [
      [FIELDS.name, form.name, LIMITS.name],
      [FIELDS.webhookUrl, form.url, LIMITS.webhookUrl],
      [FIELDS.webhookAuthHeaderName, form.header, LIMITS.headerName],
    ] as const;
    if (!withinLimits(errors, limited)) return;
    const outcome = await run(
      api.POST('/dashboard/api/dashboard/credentials', {
        body: {
          type: form.type,
          name: form.name,
          appIds: [...form.appIds],
          ...(form.type === 'webhook-header' ? { webhookAuthType: 'header' as const, webhookAuthHeaderName: form.header } : form.type === 'webhook-bearer' ? { webhookAuthType: 'bearer' as const } : {}),
          ...(form.type !== 'api-key' ? { webhookUrl: form.url } : {}),
        },
      }),
    );
    if (!outcome.ok) return errors.show(outcome.failure);
    setMade({ name: outcome.data.name, secret: outcome.data.secret });
    setForm({ ...form, name: '' });
    await load();
  };

  const remove = async (key: Credential) => {
    if (!confirm(`Delete the key “${key.name}”? It stops working at once.`)) return;
    const outcome = await run(api.DELETE('/dashboard/api/dashboard/credentials/{id}', { params: { path: { id: key.credentialId } } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    await load();
  };

  const appName = (id: string) => apps.find((a) => a.id === id)?.name ?? id;

  return (
    <section aria-labelledby="keys">
      <h1 id="keys">API keys</h1>
      <ErrorNote failure={failure} onRetry={load} />
      {made && <SecretOnce label={made.until ? `The new secret of “${made.name}”` : `The secret of “${made.name}”`} secret={made.secret} />}
      {made?.until && (
        <p data-rolled id="rolled" tabIndex={-1}>The old secret works until {when(made.until)}, then only this one.
        </p>
      )}
      {keys === undefined ? (
        !failure && <Loading />
      ) : keys.length === 0 ? (
        <p>No keys yet.</p>
      ) : (
        <table data-keys>
          <TableHead columns={['Name', 'Type', 'Key', 'Apps', 'Made', 'Last used']} actions="Roll or delete" />
          <tbody>
            {keys.map((key) => (
              <tr key={key.credentialId} data-key={key.credentialId}>
                <td data-label="Name">{key.name}</td>
                <td data-label="Type">{key.type}</td>
                <td data-label="Key">
                  <code>{key.keyPreview}</code>
                  <OldSecretNote activity={activity.get(key.credentialId)} />
                </td>
                <td data-label="Apps">{key.appIds.map(appName).join(', ')}</td>
                <td data-label="Made">{when(key.createdAt)}</td>
                <td data-label="Last used">
                  <LastUsed activity={activity.get(key.credentialId)} />
                </td>
                <td>
                  <button type="button" onClick={() => setRolling(key)} aria-label={`Roll the key ${key.name}`}>
                    Roll
                  </button>{' '}
                  <button type="button" class="danger" onClick={() => remove(key)} aria-label={`Delete the key ${key.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {keys !== undefined && keys.length > 0 && <LastUsedHint />}
      {rolling && (
        <RollKey
          credentialId={rolling.credentialId}
          name={rolling.name}
          onCancel={() => setRolling(undefined)}
          onRefused={() => void load()}
          onRolled={async (rolled) => {
            setMade({ name: rolling.name, secret: rolled.secret, until: rolled.previousKeyUntil });
            setRolling(undefined);
            await load();
          }}
        />
      )}
      <h2>New key</h2>
      <form onSubmit={create} noValidate>
        <label for="key-type">Type</label>
        <select id="key-type" aria-describedby="key-types" value={form.type} onChange={(e) => setForm({ ...form, type: (e.target as HTMLSelectElement).value as KeyType })}>
          {TYPES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        <ul class="hint" id="key-types" data-key-types>
          {TYPES.map(([value, , line]) => (
            <li key={value}>{line}</li>
          ))}
        </ul>
        <TextField id={FIELDS.name} label="Name" required value={form.name} onValue={(name) => setForm({ ...form, name })} errors={errors} limit={LIMITS.name} />
        {form.type !== 'api-key' && (
          <TextField id={FIELDS.webhookUrl} label="Webhook URL" type="url" required value={form.url} onValue={(url) => setForm({ ...form, url })} errors={errors} limit={LIMITS.webhookUrl} />
        )}
        {form.type === 'webhook-header' && (
          <TextField id={FIELDS.webhookAuthHeaderName} label="Header name" required value={form.header} onValue={(header) => setForm({ ...form, header })} errors={errors} limit={LIMITS.headerName} />
        )}
        <fieldset id={FIELDS.appIds} tabIndex={-1}>
          <legend>Apps this key may use</legend>
          {apps.length === 0 && <p class="muted">Make an app first.</p>}
          {apps.map((app) => (
            <label key={app.id} class="inline">
              <input
                type="checkbox"
                id={`key-app-${app.id}`}
                aria-describedby={errors.of(FIELDS.appIds) ? `${FIELDS.appIds}-error` : undefined}
                checked={form.appIds.has(app.id)}
                onChange={(e) => {
                  const appIds = new Set(form.appIds);
                  if ((e.target as HTMLInputElement).checked) appIds.add(app.id);
                  else appIds.delete(app.id);
                  setForm({ ...form, appIds });
                }}
              />{' '}
              {app.name}
            </label>
          ))}
          <FieldError errors={errors} id={FIELDS.appIds} />
        </fieldset>
        <button type="submit">Create key</button>
        <FormError errors={errors} />
      </form>
    </section>
  );
};
