/** The user's apps, and a new one on the messengers chosen. */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { BASE, navigate } from '../router';
import { ErrorNote, Loading } from '../ui';

type App = components['schemas']['App'];
const MESSENGERS = ['signal', 'simplex', 'session'] as const;

export const Apps = (props: { onFailure: (failure: Failure) => void }) => {
  const [apps, setApps] = useState<App[] | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set(['signal', 'simplex']));

  const load = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/apps'));
    if (outcome.ok) setApps(outcome.data.items);
    else (outcome.failure.signedOut ? props.onFailure : setFailure)(outcome.failure);
  };
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const protocol = MESSENGERS.filter((m) => chosen.has(m));
    const outcome = await run(api.POST('/dashboard/api/dashboard/apps', { body: { name, protocol } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    navigate(`${BASE}/apps/${outcome.data.id}`);
  };

  return (
    <section aria-labelledby="apps">
      <h1 id="apps">Apps</h1>
      <ErrorNote failure={failure} onRetry={load} />
      {apps === undefined ? (
        !failure && <Loading />
      ) : apps.length === 0 ? (
        <p>No apps yet: make the first one below.</p>
      ) : (
        <ul class="cards" data-apps>
          {apps.map((app) => (
            <li key={app.id}>
              <a href={`${BASE}/apps/${app.id}`}>{app.name}</a>
              <span class="muted">
                {' '}
                {app.messengers.map((m) => `${m.messenger}: ${m.status}`).join(' · ')} · {app.deliveryType}
              </span>
            </li>
          ))}
        </ul>
      )}
      <h2>New app</h2>
      <form onSubmit={create}>
        <label for="app-name">Name</label>
        <input id="app-name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <fieldset>
          <legend>Messengers</legend>
          {MESSENGERS.map((m) => (
            <label key={m} class="inline">
              <input
                type="checkbox"
                name="protocol"
                value={m}
                checked={chosen.has(m)}
                onChange={(e) => {
                  const next = new Set(chosen);
                  if ((e.target as HTMLInputElement).checked) next.add(m);
                  else next.delete(m);
                  setChosen(next);
                }}
              />{' '}
              {m === 'signal' ? 'Signal' : m === 'simplex' ? 'SimpleX' : 'Session'}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create app</button>
      </form>
    </section>
  );
};
