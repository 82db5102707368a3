/**
 * Which alerts reach the user on which channel, and the messenger contacts linked to the account
 * (sign-in and alerts). A channel that cannot reach the user is not offered: e-mail without a mail
 * server, a messenger without a linked contact on it (each says why; what is stored is kept).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { MAIL } from '../install';
import { ErrorNote, Loading, when } from '../ui';

type Preferences = components['schemas']['NotificationPreferences'];
type Contact = { id: string; messenger: 'signal' | 'simplex' | 'session'; contactId: string; linkedAt: string };

const CATEGORY: Record<string, string> = {
  'message-abandoned': 'A message was given up',
  'messenger-health': 'A bot’s messenger is unhealthy',
  'sign-in': 'Someone signed in',
  credentials: 'API keys changed',
  invoices: 'Invoices',
};
const CHANNEL: Record<string, string> = { email: 'E-mail', signal: 'Signal', simplex: 'SimpleX', session: 'Session' };

export const Notifications = (props: { onFailure: (failure: Failure) => void }) => {
  const [prefs, setPrefs] = useState<Preferences | undefined>();
  const [contacts, setContacts] = useState<Contact[]>([]);
  const [failure, setFailure] = useState<Failure | undefined>();
  const [said, setSaid] = useState<string | undefined>();
  const [linking, setLinking] = useState<{ linkId: string; command: string; expiresAt: string } | undefined>();

  const load = async () => {
    setFailure(undefined);
    const [p, c] = await Promise.all([run(api.GET('/dashboard/api/dashboard/notification-preferences')), run(api.GET('/dashboard/auth/contacts'))]);
    if (!p.ok) return (p.failure.signedOut ? props.onFailure : setFailure)(p.failure);
    setPrefs(p.data);
    if (c.ok) setContacts(c.data.items);
  };
  useEffect(() => void load(), []);

  useEffect(() => {
    if (!linking) return;
    const timer = setInterval(async () => {
      const outcome = await run(api.GET('/dashboard/auth/contacts/link/{linkId}', { params: { path: { linkId: linking.linkId } } }));
      if (!outcome.ok || outcome.data.data.status !== 'pending') {
        clearInterval(timer);
        setLinking(undefined);
        if (outcome.ok)
          setSaid(
            outcome.data.data.status === 'linked'
              ? 'The contact is linked.'
              : outcome.data.data.status === 'refused'
                ? 'The contact that sent the code was refused (it is linked to another account, or sent too many codes), and the code no longer works: ask for a new one.'
                : 'The code expired before it arrived: ask for a new one.',
          );
        else setFailure(outcome.failure);
        await load();
      }
    }, 2000);
    return () => clearInterval(timer);
  }, [linking]);

  if (!prefs) return failure ? <ErrorNote failure={failure} onRetry={load} /> : <Loading />;

  const save = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/api/dashboard/notification-preferences', { body: prefs }));
    if (!outcome.ok) return setFailure(outcome.failure);
    setSaid('Preferences saved.');
  };

  /** Why a channel cannot reach the user now, or undefined when it can. */
  const unusable = (channel: string): string | undefined =>
    channel === 'email'
      ? MAIL
        ? undefined
        : 'E-mail is not offered: this Relay has no mail server (its operator sets SMTP_URL).'
      : contacts.some((c) => c.messenger === channel)
        ? undefined
        : `${CHANNEL[channel]}: link a ${CHANNEL[channel]} contact of yours below to get alerts there.`;
  const hints = prefs.channels.filter((channel) => unusable(channel));

  const toggle = (channel: keyof Preferences['preferences'], category: keyof Preferences['preferences']['email'], on: boolean) =>
    setPrefs({ ...prefs, preferences: { ...prefs.preferences, [channel]: { ...prefs.preferences[channel], [category]: on } } });

  const link = async () => {
    setFailure(undefined);
    const outcome = await run(api.POST('/dashboard/auth/contacts/link'));
    if (!outcome.ok) return setFailure(outcome.failure);
    setLinking(outcome.data.data);
  };

  const unlink = async (contact: Contact) => {
    const outcome = await run(api.DELETE('/dashboard/auth/contacts/{id}', { params: { path: { id: contact.id } } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    await load();
  };

  return (
    <section aria-labelledby="notifications">
      <h1 id="notifications">Notifications</h1>
      <ErrorNote failure={failure} onRetry={load} />
      {said && <p role="status">{said}</p>}
      <form onSubmit={save}>
        {hints.length > 0 && (
          <ul class="hint" data-channel-hints>
            {hints.map((channel) => (
              <li key={channel} id={`channel-${channel}-hint`}>
                {unusable(channel)}
              </li>
            ))}
          </ul>
        )}
        <table data-preferences>
          <caption>What reaches you where</caption>
          <thead>
            <tr>
              <th scope="col">Alert</th>
              {prefs.channels.map((channel) => (
                <th scope="col" key={channel}>
                  {CHANNEL[channel]}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {prefs.categories.map((category) => (
              <tr key={category}>
                <th scope="row">{CATEGORY[category] ?? category}</th>
                {prefs.channels.map((channel) => (
                  <td key={channel} data-label={CHANNEL[channel]}>
                    <input
                      type="checkbox"
                      aria-label={`${CATEGORY[category] ?? category} by ${CHANNEL[channel]}`}
                      disabled={unusable(channel) !== undefined}
                      aria-describedby={unusable(channel) ? `channel-${channel}-hint` : undefined}
                      checked={!unusable(channel) && prefs.preferences[channel][category]}
                      onChange={(e) => toggle(channel, category, (e.target as HTMLInputElement).checked)}
                    />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
        <button type="submit">Save preferences</button>
      </form>
      <h2>Linked messenger contacts</h2>
      <p>A contact of yours linked here can sign you in and receives the alerts you chose for its messenger.</p>
      {contacts.length === 0 ? (
        <p>No contact linked yet.</p>
      ) : (
        <ul data-contacts>
          {contacts.map((c) => (
            <li key={c.id}>
              {CHANNEL[c.messenger]} <code>{c.contactId}</code>, linked {when(c.linkedAt)}{' '}
              <button type="button" class="danger" onClick={() => unlink(c)}>
                Unlink
              </button>
            </li>
          ))}
        </ul>
      )}
      {linking ? (
        <p role="status">
          From the contact to link, send <code data-command>{linking.command}</code> to one of your Relay bots before {new Date(linking.expiresAt).toLocaleTimeString()}.
        </p>
      ) : (
        <button type="button" onClick={link}>
          Link a contact
        </button>
      )}
    </section>
  );
};
