/** API keys: the user's credentials (secrets redacted), a new one of each type (its secret shown once), deleting one. */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { ErrorNote, Loading, SecretOnce, when } from '../ui';

type Credential = components['schemas']['Credential'];
type App = components['schemas']['App'];
type KeyType = Credential['type'];

const TYPES: ReadonlyArray<readonly [KeyType, string]> = [
  ['api-key', 'API key (Authorization: Bearer or X-API-Key)'],
  ['webhook-bearer', 'Webhook key (Authorization: Bearer only)'],
  ['webhook-header', 'Webhook key in a header of your choice'],
];

export const Keys = (props: { onFailure: (failure: Failure) => void }) => {
  const [keys, setKeys] = useState<Credential[] | undefined>();
  const [apps, setApps] = useState<App[]>([]);
  const [failure, setFailure] = useState<Failure | undefined>();
  const [made, setMade] = useState<{ name: string; secret: string } | undefined>();
  const [form, setForm] = useState({ type: 'api-key' as KeyType, name: '', appIds: new Set<string>(), header: '', url: '' });

  const load = async () => {
    setFailure(undefined);
    const [listed, owned] = await Promise.all([run(api.GET('/dashboard/api/dashboard/credentials')), run(api.GET('/dashboard/api/dashboard/apps'))]);
    if (!listed.ok) return (listed.failure.signedOut ? props.onFailure : setFailure)(listed.failure);
    setKeys(listed.data.items);
    if (owned.ok) setApps(owned.data.items);
  };
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    setMade(undefined);
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
    if (!outcome.ok) return setFailure(outcome.failure);
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
      {made && <SecretOnce label={`The secret of “${made.name}”`} secret={made.secret} />}
      {keys === undefined ? (
        !failure && <Loading />
      ) : keys.length === 0 ? (
        <p>No keys yet.</p>
      ) : (
        <table data-keys>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Key</th>
              <th scope="col">Apps</th>
              <th scope="col">Made</th>
              <th scope="col">
                <span class="visually-hidden">Delete</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => (
              <tr key={key.credentialId}>
                <td>{key.name}</td>
                <td>{key.type}</td>
                <td>
                  <code>{key.keyPreview}</code>
                </td>
                <td>{key.appIds.map(appName).join(', ')}</td>
                <td>{when(key.createdAt)}</td>
                <td>
                  <button type="button" class="danger" onClick={() => remove(key)} aria-label={`Delete the key ${key.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>New key</h2>
      <form onSubmit={create}>
        <label for="key-type">Type</label>
        <select id="key-type" value={form.type} onChange={(e) => setForm({ ...form, type: (e.target as HTMLSelectElement).value as KeyType })}>
          {TYPES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        <label for="key-name">Name</label>
        <input id="key-name" required maxLength={100} value={form.name} onInput={(e) => setForm({ ...form, name: (e.target as HTMLInputElement).value })} />
        {form.type !== 'api-key' && (
          <>
            <label for="key-webhook-url">Webhook URL</label>
            <input id="key-webhook-url" type="url" required value={form.url} onInput={(e) => setForm({ ...form, url: (e.target as HTMLInputElement).value })} />
          </>
        )}
        {form.type === 'webhook-header' && (
          <>
            <label for="key-header">Header name</label>
            <input id="key-header" required value={form.header} onInput={(e) => setForm({ ...form, header: (e.target as HTMLInputElement).value })} />
          </>
        )}
        <fieldset>
          <legend>Apps this key may use</legend>
          {apps.length === 0 && <p class="muted">Make an app first.</p>}
          {apps.map((app) => (
            <label key={app.id} class="inline">
              <input
                type="checkbox"
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
        </fieldset>
        <button type="submit">Create key</button>
      </form>
    </section>
  );
};
