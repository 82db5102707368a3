/**
 * An app's webhook as its attempts say (the message log's `webhook`): healthy, or failing since
 * when; each recent attempt with its time, status or error and duration; "Send a test event" (a
 * signed sample marked as a test, `POST /dashboard/webhook/test`) and "Retry now" for a message
 * waiting out its backoff (`POST /dashboard/webhook/retry`).
 */
import { useState } from 'preact/hooks';
import type { Failure } from '../api';
import { relayRoute } from '../relay-routes';
import { TableHead, ErrorNote, when } from '../ui';
import type { WebhookHealth } from '../../../projections/message-log/entries';

type TestOutcome = { messageId: string; ok: boolean; status: number | null; reason: string | null; durationMs: number; at: string };

const outcomeWords = (a: { ok: boolean; status: number | null; reason: string | null }) => (a.ok ? `took it (${a.status})` : (a.reason ?? `answered ${a.status}`));

export const WebhookActivity = (props: { appId: string; health: WebhookHealth; onChanged: () => void }) => {
  const { health } = props;
  const [failure, setFailure] = useState<Failure | undefined>();
  const [test, setTest] = useState<TestOutcome | undefined>();
  const [retried, setRetried] = useState<string | undefined>();

  const sendTest = async () => {
    setFailure(undefined);
    setTest(undefined);
    const outcome = await relayRoute<TestOutcome>('/dashboard/webhook/test', { appId: props.appId });
    if (outcome.ok) setTest(outcome.data);
    else setFailure(outcome.failure);
  };
  const retry = async () => {
    setFailure(undefined);
    const outcome = await relayRoute<{ requestedAt: string }>('/dashboard/webhook/retry', { appId: props.appId });
    if (!outcome.ok) return setFailure(outcome.failure);
    setRetried(outcome.data.requestedAt);
    props.onChanged();
  };

  return (
    <section aria-labelledby="webhook-activity" data-webhook-activity>
      <h2 id="webhook-activity">Webhook</h2>
      <p data-webhook-health={health.state} role="status">
        {health.state === 'failing'
          ? `Failing: the last ${health.failuresInARow} attempt${health.failuresInARow === 1 ? '' : 's'} failed, since ${when(health.failingSince)}. Messages wait in order until it takes them.`
          : health.state === 'ok'
            ? 'Healthy: the last attempt was taken.'
            : 'No attempt yet: nothing was delivered by webhook so far.'}
      </p>
      <p>
        <button type="button" onClick={sendTest}>
          Send a test event
        </button>{' '}
        {health.state === 'failing' && (
          <button type="button" onClick={retry}>
            Retry now
          </button>
        )}
      </p>
      <ErrorNote failure={failure} />
      {test && (
        <p data-test-outcome={test.ok ? 'ok' : 'failed'} role="status">
          Test event <code>{test.messageId}</code>: the webhook {outcomeWords(test)} in {test.durationMs} ms. It carries <code>"test": true</code> and the header{' '}
          <code>relay-webhook-test: true</code>, signed like every delivery.
        </p>
      )}
      {retried && <p role="status">Retry asked at {when(retried)}: the waiting message goes now.</p>}
      {health.attempts.length > 0 && (
        <table data-webhook-attempts>
          <caption>Recent attempts, newest first</caption>
          <TableHead columns={['Time', 'Message', 'Attempt', 'Outcome', 'Duration']} />
          <tbody>
            {health.attempts.map((a) => (
              <tr key={`${a.messageId}/${a.attempt}`} data-attempt-ok={String(a.ok)}>
                <td data-label="Time">{when(a.at)}</td>
                <td data-label="Message">
                  <code>{a.messageId}</code>
                </td>
                <td data-label="Attempt">{a.attempt}</td>
                <td data-label="Outcome">{outcomeWords(a)}</td>
                <td data-label="Duration">{a.durationMs} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
};
