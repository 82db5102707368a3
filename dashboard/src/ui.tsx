/** Small pieces every page uses: the frame with its navigation, errors, secrets shown once, QR codes. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { renderSVG } from 'uqr';
import type { Failure } from './api';
import { SIMULATED, simulatedInWords } from './install';
import { BASE } from './router';

const NAV: ReadonlyArray<readonly [string, string]> = [
  [`${BASE}/apps`, 'Apps'],
  [`${BASE}/keys`, 'API keys'],
  [`${BASE}/notifications`, 'Notifications'],
  [`${BASE}/billing`, 'Billing'],
  [`${BASE}/stats`, 'Statistics'],
  [`${BASE}/account`, 'Account'],
];

export const Frame = (props: { path: string; email?: string | undefined; children: ComponentChildren }) => (
  <>
    <a
      class="skip"
      href="#main"
      onClick={(event) => {
        // The focus itself moves to the content (the router would otherwise take the link as a page change).
        event.preventDefault();
        document.getElementById('main')?.focus();
      }}
    >
      Skip to content
    </a>
    <header>
      <a class="brand" href={`${BASE}/apps`}>Relay</a>
      {SIMULATED.length > 0 && (
        <span class="badge" data-simulated-badge title="Nothing reaches a real messenger or moves real money">
          Test mode: {simulatedInWords()} simulated
        </span>
      )}
      {props.email !== undefined && (
        <nav aria-label="Dashboard">
          <ul>
            {NAV.map(([href, label]) => (
              <li key={href}>
                <a href={href} aria-current={props.path === href || props.path.startsWith(`${href}/`) ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      )}
      {props.email !== undefined && <span class="who">{props.email}</span>}
    </header>
    <main id="main" tabIndex={-1}>
      {props.children}
    </main>
  </>
);

/** A failure in plain words; a retry button when trying again can help. */
export const ErrorNote = (props: { failure: Failure | undefined; onRetry?: () => void }) =>
  props.failure ? (
    <div class="error" role="alert">
      <p>{props.failure.message}</p>
      {props.failure.retry && props.onRetry && (
        <button type="button" onClick={props.onRetry}>
          Try again
        </button>
      )}
    </div>
  ) : null;

/** A button that copies `text` to the clipboard, and says whether it did. */
export const CopyButton = (props: { text: string; label?: string }) => {
  const [copied, setCopied] = useState<boolean | undefined>();
  return (
    <button
      type="button"
      onClick={() => {
        const copying = navigator.clipboard?.writeText(props.text);
        if (copying) void copying.then(() => setCopied(true), () => setCopied(false));
        else setCopied(false);
      }}
    >
      {copied === true ? 'Copied' : copied === false ? 'Could not copy: select the text' : (props.label ?? 'Copy')}
    </button>
  );
};

/** A secret Relay shows once: with a copy button and the warning that it will not be shown again. */
export const SecretOnce = (props: { label: string; secret: string }) => (
  <div class="secret" role="status">
    <p>
      <strong>{props.label}</strong>: copy it now, it will not be shown again.
    </p>
    <code data-secret>{props.secret}</code>
    <CopyButton text={props.secret} />
  </div>
);

export const NotFound = () => (
  <section>
    <h1>Page not found</h1>
    <p>
      There is no dashboard page at this address. <a href={`${BASE}/apps`}>Go to your apps</a>.
    </p>
  </section>
);

/** A QR code of `text` (drawn here, nothing fetched), with the text beside it for those who cannot scan. */
export const Qr = (props: { text: string; label: string }) => (
  <figure class="qr">
    <div role="img" aria-label={props.label} dangerouslySetInnerHTML={{ __html: renderSVG(props.text, { border: 2 }) }} />
    <figcaption>
      <code>{props.text}</code>
    </figcaption>
  </figure>
);

/** A table's head: its columns, and (given `actions`) a last one for the row's actions, named for screen readers only. */
export const TableHead = (props: { columns: readonly string[]; actions?: string }) => (
  <thead>
    <tr>
      {props.columns.map((column) => (
        <th scope="col" key={column}>
          {column}
        </th>
      ))}
      {props.actions !== undefined && (
        <th scope="col">
          <span class="visually-hidden">{props.actions}</span>
        </th>
      )}
    </tr>
  </thead>
);

export const Loading = () => <p aria-busy="true">Loading…</p>;

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

const MESSENGER_LABELS: Record<string, string> = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' };

/** A labelled choice of one of the app's messengers (`all` first: the empty value, when given). */
export const MessengerSelect = (props: { messengers: readonly string[]; value: string; onValue: (value: string) => void; all?: boolean }) => (
  <label>
    Messenger{' '}
    <select value={props.value} onChange={(e) => props.onValue((e.target as HTMLSelectElement).value)}>
      {props.all && <option value="">all</option>}
      {props.messengers.map((m) => (
        <option key={m} value={m}>
          {MESSENGER_LABELS[m] ?? m}
        </option>
      ))}
    </select>
  </label>
);
