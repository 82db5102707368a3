/**
 * The group of one app-messenger: its members and roles, adding, removing, admins, and the invite
 * link. Session has no groups in Relay (its Session bot talks one to one): its panel says so.
 */
import { useState } from 'preact/hooks';
import { api, run, type Failure } from '../api';
import type { components } from '../api/account-api';
import { FormError, TextField, useFormErrors, withinLimits } from '../forms';
import { ErrorNote, Qr, TableHead } from '../ui';

/** The account API's limit of a contact id (domain/shared/text.ts). */
const CONTACT_LIMIT = 256;

type Members = components['schemas']['GroupMembers'];
type Change = '/dashboard/api/dashboard/group/members/add' | '/dashboard/api/dashboard/group/members/remove' | '/dashboard/api/dashboard/group/promote-admin' | '/dashboard/api/dashboard/group/demote-admin';

export const Group = (props: { messenger: components['schemas']['AppMessenger']; name: string }) =>
  props.messenger.messenger === 'session' ? (
    <details class="group" data-group="session">
      <summary>Session group</summary>
      <p>Session groups are not supported: Relay’s Session bot writes to each contact one to one, so there are no members to add and no invite link.</p>
    </details>
  ) : (
    <MessengerGroup {...props} />
  );

const MessengerGroup = (props: { messenger: components['schemas']['AppMessenger']; name: string }) => {
  const appMessengerId = props.messenger.id;
  const addField = `add-${appMessengerId}`;
  const adding = useFormErrors(addField, { contactId: addField });
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

  /** Changes the group; true when done. A failure is shown beside the form that asked (the add form), or above the members. */
  const change = async (path: Change, contact: string, done: string, report: (failure: Failure) => void = setFailure) => {
    setFailure(undefined);
    adding.clear();
    setSaid(undefined);
    const outcome = await run(api.POST(path, { body: { appMessengerId, contactId: contact } }));
    if (!outcome.ok) {
      report(outcome.failure);
      return false;
    }
    setSaid(outcome.data && typeof outcome.data === 'object' && 'status' in outcome.data && outcome.data.status === 'pending' ? `${done}: waiting for ${props.name} to confirm.` : `${done}.`);
    await load();
    return true;
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
              <TableHead columns={['Contact', 'Role', 'Status']} actions="Change" />
              <tbody>
                {members.members.map((m) => (
                  <tr key={m.contactId}>
                    <td data-label="Contact">
                      <code>{m.contactId}</code>
                    </td>
                    <td data-label="Role">{m.role}</td>
                    <td data-label="Status">{m.status}</td>
                    <td data-label="Change">
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
            noValidate
            onSubmit={(e) => {
              e.preventDefault();
              if (!withinLimits(adding, [[addField, contactId, CONTACT_LIMIT]])) return;
              // The contact id is kept when it is refused, to be corrected.
              void change('/dashboard/api/dashboard/group/members/add', contactId, 'Added', adding.show).then((done) => done && setContactId(''));
            }}
          >
            <TextField id={addField} label={`Add a contact (their ${props.name} contact id)`} required value={contactId} onValue={setContactId} errors={adding} limit={CONTACT_LIMIT} />
            <button type="submit">Add to the group</button>
            <FormError errors={adding} />
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
