/**
 * The keys page's own parts beside the account API's credentials (Relay's routes, docs/dashboard.md):
 * a key's last use and, after a roll, until when its old secret works
 * (`GET /dashboard/credentials/activity`); rolling a key (`POST /dashboard/credentials/roll`): a new
 * secret for the same key, shown once, while the old one keeps working for the time chosen.
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import { FormError, useFormErrors } from '../forms';
import { relayRoute } from '../relay-routes';
import { when } from '../ui';

/** `GET /dashboard/credentials/activity`'s item (apps/http/credential-routes.ts). */
export interface KeyActivity {
  credentialId: string;
  lastUsedAt: string | null;
  previousKeyUntil: string | null;
}

/** `POST /dashboard/credentials/roll`'s answer. */
export interface RolledKey {
  credentialId: string;
  keyPreview: string;
  previousKeyUntil: string;
  secret: string;
}

export const loadKeyActivity = async (): Promise<Map<string, KeyActivity>> => {
  const outcome = await relayRoute<{ items: KeyActivity[] }>('/dashboard/credentials/activity');
  return new Map(outcome.ok ? outcome.data.items.map((item) => [item.credentialId, item]) : []);
};

/** How long the old secret may keep working: the choices offered (the route takes an hour to 7 days). */
const OVERLAPS: ReadonlyArray<readonly [number, string]> = [
  [3600, '1 hour'],
  [86_400, '24 hours'],
  [604_800, '7 days'],
];

/** "Last used" of a key (in its column, or its card's line at a phone's width): the first use of the hour it was last used in, or never. */
export const LastUsed = (props: { activity: KeyActivity | undefined }) =>
  props.activity?.lastUsedAt ? (
    <time data-last-used={props.activity.lastUsedAt} dateTime={props.activity.lastUsedAt}>
      {when(props.activity.lastUsedAt)}
    </time>
  ) : (
    <span data-last-used="never">never</span>
  );

/** What "last used" means, under the table. */
export const LastUsedHint = () => (
  <p class="hint" data-last-used-hint>
    Last used: Relay notes a key’s use once an hour at most, so the time shown is the first use in the hour it was last used.
  </p>
);

/** While a rolled key's old secret still works: until when. */
export const OldSecretNote = (props: { activity: KeyActivity | undefined }) =>
  props.activity?.previousKeyUntil ? (
    <span class="hint" data-old-secret-until={props.activity.previousKeyUntil}>
      {' '}
      (old secret works until {when(props.activity.previousKeyUntil)})
    </span>
  ) : null;

/** The form that rolls one key: the overlap, then Roll; the focus goes to it when it opens. */
export const RollKey = (props: { credentialId: string; name: string; onRolled: (rolled: RolledKey) => void; onRefused: () => void; onCancel: () => void }) => {
  const [overlap, setOverlap] = useState(OVERLAPS[1]![0]);
  const [busy, setBusy] = useState(false);
  const errors = useFormErrors('roll', {});
  useLayoutEffect(() => document.getElementById('roll-heading')?.focus(), [props.credentialId]);

  const roll = async (event: Event) => {
    event.preventDefault();
    errors.clear();
    setBusy(true);
    const outcome = await relayRoute<RolledKey>('/dashboard/credentials/roll', { credentialId: props.credentialId, overlapSeconds: overlap });
    setBusy(false);
    if (!outcome.ok) {
      errors.show(outcome.failure);
      // The list may be out of date (a key deleted elsewhere): read it again.
      return props.onRefused();
    }
    props.onRolled(outcome.data);
  };

  return (
    <form onSubmit={roll} aria-labelledby="roll-heading" data-roll-form noValidate>
      <h2 id="roll-heading" tabIndex={-1}>
        Roll the key “{props.name}”
      </h2>
      <p class="hint" id="roll-what">
        A new secret for the same key (same apps, same name), shown once. The old secret keeps working for the time you choose, so that your programs can move to the new one; then only the new one works.
      </p>
      <label for="roll-overlap">The old secret keeps working for</label>
      <select id="roll-overlap" aria-describedby="roll-what" value={String(overlap)} onChange={(e) => setOverlap(Number((e.target as HTMLSelectElement).value))}>
        {OVERLAPS.map(([seconds, label]) => (
          <option key={seconds} value={String(seconds)}>
            {label}
          </option>
        ))}
      </select>
      <div>
        <button type="submit" disabled={busy}>
          Roll the key
        </button>{' '}
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <FormError errors={errors} />
    </form>
  );
};
