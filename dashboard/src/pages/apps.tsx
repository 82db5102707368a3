/** The user's apps, and a new one on the messengers chosen. */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { BASE, navigate } from '../router';
import { FieldError, FormError, TextField, useFormErrors, withinLimits } from '../forms';
import { ErrorNote, Loading } from '../ui';

type App = components['schemas']['App'];
const MESSENGERS = ['signal', 'simplex', 'session'] as const;
/** The account API's limit of a name (domain/shared/text.ts). */
export const NAME_LIMIT = 100;

export const Apps = (props: { onFailure: (failure: Failure) => void }) => {
  const [apps, setApps] = useState<App[] | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set(['signal', 'simplex']));
  const errors = useFormErrors('new-app', { name: 'app-name', protocol: 'app-messengers' });

  const load = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/apps'));
    if (outcome.ok) setApps(outcome.data.items);
    else (outcome.failure.signedOut ? props.onFailure : setFailure)(outcome.failure);
  };
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    errors.clear();
    if (!withinLimits(errors, [['app-name', name, NAME_LIMIT]])) return;
    const protocol = MESSENGERS.filter((m) => chosen.has(m));
    const outcome = await run(api.POST('/dashboard/api/dashboard/apps', { body: { name, protocol } }));
    if (!outcome.ok) return errors.show(outcome.failure);
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
      <form onSubmit={create} noValidate>
        <TextField id="app-name" label="Name" required value={name} onValue={setName} errors={errors} limit={NAME_LIMIT} />
        <fieldset id="app-messengers" tabIndex={-1} aria-describedby={errors.of('app-messengers') ? 'app-messengers-error' : undefined}>
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
        <FieldError errors={errors} id="app-messengers" />
        <button type="submit">Create app</button>
        <FormError errors={errors} />
      </form>
    </section>
  );
};
