/**
 * An app's message log (`GET /dashboard/messages/:appId`, docs/dashboard.md "Message log"): its
 * recent outbound and inbound messages with their status and attempts, filtered by status and
 * messenger, read again every few seconds while the page is seen. Contact ids are sealed in the
 * history and the log holds none: the column says so (docs/privacy.md).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Failure } from '../api';
import { relayRoute } from '../relay-routes';
import { TableHead, ErrorNote, MessengerSelect, when } from '../ui';
import { APP_REFRESH_MS, useWhileVisible } from '../visible';
import type { LogEntry, LogStatus, LogStep, MessageLogView } from '../../../projections/message-log/entries';
import { WebhookActivity } from './webhook-activity';
import type { components } from '../api/account-api';

const MESSENGER_NAMES: Record<string, string> = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' };
export const STATUS_WORDS: Record<LogStatus, string> = {
  accepted: 'accepted',
  deferred: 'waiting for its bot',
  failed: 'failed, to be retried',
  delivered: 'delivered',
  abandoned: 'abandoned',
  received: 'received, waiting',
  polled: 'polled',
  expired: 'expired unpolled',
};
const STEP_WORDS: Record<LogStep['what'], string> = {
  accepted: 'accepted',
  received: 'received',
  'attempt-failed': 'attempt failed',
  deferred: 'deferred',
  timestamped: 'timestamped',
  delivered: 'delivered',
  abandoned: 'abandoned',
  'webhook-failed': 'webhook failed',
  'webhook-delivered': 'webhook took it',
  'picked-up': 'picked up',
  forgotten: 'forgotten',
};

const stepLine = (step: LogStep) =>
  [
    `${when(step.at)}: ${STEP_WORDS[step.what]}`,
    step.attempt ? ` (attempt ${step.attempt})` : '',
    step.status !== undefined ? ` ${step.status ?? 'no answer'}` : '',
    step.durationMs !== undefined ? `, ${step.durationMs} ms` : '',
    step.reason ? `: ${step.reason}` : '',
    step.dueAt ? `; next at ${when(step.dueAt)}` : '',
  ].join('');

/** The log of an app, as the page reads it (and again while seen), with the filter it was asked with. */
export const useMessageLog = (appId: string, filter: { status: string; messenger: string }) => {
  const [view, setView] = useState<MessageLogView | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const load = async () => {
    const query = new URLSearchParams(Object.entries(filter).filter(([, v]) => v !== ''));
    const outcome = await relayRoute<MessageLogView>(`/dashboard/messages/${encodeURIComponent(appId)}${query.size ? `?${query}` : ''}`);
    if (outcome.ok) setView(outcome.data);
    setFailure(outcome.ok ? undefined : outcome.failure);
  };
  useEffect(() => void load(), [appId, filter.status, filter.messenger]);
  useWhileVisible(() => void load(), APP_REFRESH_MS);
  return { view, failure, reload: load };
};

const Row = (props: { entry: LogEntry }) => {
  const m = props.entry;
  return (
    <tr data-message={m.messageId} data-log-status={m.status}>
      <td data-label="Time">{when(m.at)}</td>
      <td data-label="Message">
        <code>{m.messageId}</code> <span class="muted">{m.direction === 'outbound' ? 'out' : 'in'}</span>
      </td>
      <td data-label="Messenger">{MESSENGER_NAMES[m.messenger] ?? m.messenger}</td>
      <td data-label="Contact" class="muted">
        sealed
      </td>
      <td data-label="Status" data-status-text>
        {STATUS_WORDS[m.status]}
        {m.reason && `: ${m.reason}`}
      </td>
      <td data-label="Attempts">
        <details>
          <summary>{m.attempts}</summary>
          <ul data-steps>
            {m.steps.map((step, i) => (
              <li key={i}>{stepLine(step)}</li>
            ))}
          </ul>
        </details>
      </td>
    </tr>
  );
};

export const MessageLog = (props: { app: components['schemas']['App'] }) => {
  const [status, setStatus] = useState('');
  const [messenger, setMessenger] = useState('');
  const { view, failure, reload } = useMessageLog(props.app.id, { status, messenger });
  return (
    <>
    {props.app.deliveryType === 'webhook' && view && <WebhookActivity appId={props.app.id} health={view.webhook} onChanged={reload} />}
    <section aria-labelledby="message-log" data-message-log>
      <h2 id="message-log">Message log</h2>
      <p class="muted">
        The last {view?.limits.perApp ?? 200} messages of this app (kept {view ? view.limits.keepHours / 24 : 7} days at most), read again every few seconds. Contact ids are sealed in
        Relay’s history and never kept in this log: see the privacy notes.
      </p>
      <div class="filters">
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">all</option>
            {Object.entries(STATUS_WORDS).map(([value, words]) => (
              <option key={value} value={value}>
                {words}
              </option>
            ))}
          </select>
        </label>{' '}
        <MessengerSelect messengers={props.app.protocol} value={messenger} onValue={setMessenger} all />
      </div>
      <ErrorNote failure={failure} onRetry={reload} />
      {view && view.messages.length === 0 && <p data-log-empty>No message {status || messenger ? 'matches this filter' : 'yet'}.</p>}
      {view && view.messages.length > 0 && (
        <table data-log>
          <caption class="visually-hidden">Recent messages, newest first</caption>
          <TableHead columns={['Time', 'Message', 'Messenger', 'Contact', 'Status', 'Attempts']} />
          <tbody>
            {view.messages.map((m) => (
              <Row key={m.messageId} entry={m} />
            ))}
          </tbody>
        </table>
      )}
    </section>
    </>
  );
};
