/** The group of one app-messenger: its members and roles, adding, removing, admins, and the invite link. */
import { useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { ErrorNote, Qr } from '../ui';

type Members = components['schemas']['GroupMembers'];
type Change = '/dashboard/api/dashboard/group/members/add' | '/dashboard/api/dashboard/group/members/remove' | '/dashboard/api/dashboard/group/promote-admin' | '/dashboard/api/dashboard/group/demote-admin';

export const Group = (props: { messenger: components['schemas']['AppMessenger']; name: string }) => {
  const appMessengerId = props.messenger.id;
  const [members, setMembers] = useState<Members | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [contactId, setContactId] = useState('');
  const [invite, setInvite] = useState<string | null | undefined>();
  const [said, setSaid] = useState<string | undefined>();

  const load = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/group/members', { params: { query: { appMessengerId } } }));
    if (outcome.ok) setMembers(outcome.data);
    else setFailure(outcome.failure);
  };

  const change = async (path: Change, contact: string, done: string) => {
    setFailure(undefined);
    setSaid(undefined);
    const outcome = await run(api.POST(path, { body: { appMessengerId, contactId: contact } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    setSaid(outcome.data && typeof outcome.data === 'object' && 'status' in outcome.data && outcome.data.status === 'pending' ? `${done}: waiting for ${props.name} to confirm.` : `${done}.`);
    await load();
  };

  // Reading the link changes nothing; turning it on is a POST of Relay's own (same-origin).
  const showInvite = async () => {
    setFailure(undefined);
    const outcome = await run(api.GET('/dashboard/api/dashboard/group/invite-link', { params: { query: { appMessengerId } } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    setInvite(outcome.data.inviteLink);
    if (outcome.data.inviteLink === null) setSaid('The group has no invite link yet: anyone with one can join, so it is on only when you turn it on.');
  };

  const turnInviteOn = async () => {
    setFailure(undefined);
    setSaid(undefined);
    const outcome = await run(api.POST('/dashboard/group/invite-link', { body: { appMessengerId } }));
    if (!outcome.ok) return setFailure(outcome.failure);
    if ('inviteLink' in outcome.data) setInvite(outcome.data.inviteLink);
    else setSaid(`The invite link is being made by ${props.name}: show it again in a moment.`);
    await load();
  };

  return (
    <details class="group" onToggle={(e) => (e.target as HTMLDetailsElement).open && members === undefined && void load()}>
      <summary>{props.name} group</summary>
      <ErrorNote failure={failure} onRetry={load} />
      {said && <p role="status">{said}</p>}
      {members && (
        <>
          {members.members.length === 0 ? (
            <p>No members yet{members.groupId ? '' : ': the group is made with its first member or invite link'}.</p>
          ) : (
            <table data-members>
              <thead>
                <tr>
                  <th scope="col">Contact</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col">
                    <span class="visually-hidden">Change</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {members.members.map((m) => (
                  <tr key={m.contactId}>
                    <td>
                      <code>{m.contactId}</code>
                    </td>
                    <td>{m.role}</td>
                    <td>{m.status}</td>
                    <td>
                      {m.role === 'member' ? (
                        <button type="button" onClick={() => change('/dashboard/api/dashboard/group/promote-admin', m.contactId, 'Made admin')}>
                          Make admin
                        </button>
                      ) : (
                        <button type="button" onClick={() => change('/dashboard/api/dashboard/group/demote-admin', m.contactId, 'No longer admin')}>
                          Remove admin
                        </button>
                      )}
                      <button type="button" class="danger" onClick={() => change('/dashboard/api/dashboard/group/members/remove', m.contactId, 'Removed')}>
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void change('/dashboard/api/dashboard/group/members/add', contactId, 'Added').then(() => setContactId(''));
            }}
          >
            <label for={`add-${appMessengerId}`}>Add a contact (their {props.name} contact id)</label>
            <input id={`add-${appMessengerId}`} required value={contactId} onInput={(e) => setContactId((e.target as HTMLInputElement).value)} />
            <button type="submit">Add to the group</button>
          </form>
          <button type="button" onClick={showInvite}>
            Show the invite link
          </button>
          {invite === null && (
            <button type="button" onClick={turnInviteOn}>
              Turn the invite link on
            </button>
          )}
          {invite && <Qr text={invite} label={`QR code of the ${props.name} group's invite link`} />}
        </>
      )}
    </details>
  );
};
