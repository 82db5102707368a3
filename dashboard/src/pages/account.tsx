/** The account: name, the recovery code (shown once), sessions, signing out here or everywhere. */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { FormError, TextField, useFormErrors, withinLimits } from '../forms';
import { ErrorNote, SecretOnce, when } from '../ui';
import { NAME_LIMIT } from './apps';

export const Account = (props: { user: components['schemas']['User']; onSignedOut: () => void; onRenamed: () => void }) => {
  const [failure, setFailure] = useState<Failure | undefined>();
  const [name, setName] = useState(props.user.name ?? '');
  const [code, setCode] = useState<string | undefined>();
  const [sessions, setSessions] = useState<Array<{ sessionId: string; startedAt: string; expiresAt: string; current?: boolean }>>([]);
  const [said, setSaid] = useState<string | undefined>();
  const errors = useFormErrors('rename', { name: 'user-name' });

  const loadSessions = async () => {
    const outcome = await run(api.GET('/dashboard/auth/sessions'));
    if (outcome.ok) setSessions(outcome.data.items);
  };
  useEffect(() => void loadSessions(), []);

  const rename = async (event: Event) => {
    event.preventDefault();
    errors.clear();
    setSaid(undefined);
    if (!withinLimits(errors, [['user-name', name, NAME_LIMIT]])) return;
    const outcome = await run(api.POST('/dashboard/api/dashboard/user', { body: { name } }));
    if (!outcome.ok) return errors.show(outcome.failure);
    setSaid('Name saved.');
    props.onRenamed();
  };

  const newRecoveryCode = async () => {
    if (!confirm('Make a new recovery code? The one you have now stops working.')) return;
    const outcome = await run(api.POST('/dashboard/api/dashboard/recovery-code'));
    if (!outcome.ok) return setFailure(outcome.failure);
    setCode(outcome.data.data.recoveryCode);
  };

  const signOut = async (all: boolean) => {
    const outcome = await run(api.POST('/dashboard/auth/logout', { body: all ? { all: true } : {} }));
    if (!outcome.ok) return setFailure(outcome.failure);
    props.onSignedOut();
  };

  return (
    <section aria-labelledby="account">
      <h1 id="account">Account</h1>
      <ErrorNote failure={failure} />
      {said && <p role="status">{said}</p>}
      <p>
        Signed in as <strong>{props.user.email}</strong>.
      </p>
      <form onSubmit={rename} noValidate>
        <TextField id="user-name" label="Name" required value={name} onValue={setName} errors={errors} limit={NAME_LIMIT} />
        <button type="submit">Save name</button>
        <FormError errors={errors} />
      </form>
      <h2>Recovery code</h2>
      <p>If you can no longer read your mail, the recovery code signs you in once. Keep it somewhere safe.</p>
      {code ? <SecretOnce label="Your recovery code" secret={code} /> : null}
      <button type="button" onClick={newRecoveryCode}>
        Make a new recovery code
      </button>
      <h2>Sessions</h2>
      <ul data-sessions>
        {sessions.map((s) => (
          <li key={s.sessionId}>
            started {when(s.startedAt)}, until {when(s.expiresAt)}
            {s.current ? ' (this browser)' : ''}
          </li>
        ))}
      </ul>
      <button type="button" onClick={() => signOut(false)}>
        Sign out
      </button>
      <button type="button" class="danger" onClick={() => signOut(true)}>
        Sign out everywhere
      </button>
    </section>
  );
};
