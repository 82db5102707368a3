/**
 * "Send a test message" from an app's page: `POST /dashboard/messages/send`, the public send's
 * path (validated the same, counted against the user's send limit). The message then shows in the
 * message log below like any other.
 */
import { useState } from 'preact/hooks';
import type { Failure } from '../api';
import type { components } from '../api/account-api';
import { relayRoute } from '../relay-routes';
import { ErrorNote, MessengerSelect } from '../ui';

export const TestMessage = (props: { app: components['schemas']['App'] }) => {
  const [messenger, setMessenger] = useState<string>(props.app.protocol[0] ?? 'signal');
  const [contactId, setContactId] = useState('');
  const [message, setMessage] = useState('Hello from Relay');
  const [failure, setFailure] = useState<Failure | undefined>();
  const [sent, setSent] = useState<string | undefined>();

  const send = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    setSent(undefined);
    const outcome = await relayRoute<{ messageId: string }>('/dashboard/messages/send', { appId: props.app.id, messenger, contactId, message });
    if (!outcome.ok) return setFailure(outcome.failure);
    setSent(outcome.data.messageId);
  };

  return (
    <section aria-labelledby="test-message" data-test-message>
      <h2 id="test-message">Send a test message</h2>
      <form onSubmit={send}>
        <MessengerSelect messengers={props.app.protocol} value={messenger} onValue={setMessenger} />
        <label>
          Contact id <input name="contactId" value={contactId} maxLength={256} onInput={(e) => setContactId((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Message <textarea name="message" value={message} onInput={(e) => setMessage((e.target as HTMLTextAreaElement).value)} />
        </label>
        <button type="submit">Send the test message</button>
      </form>
      <ErrorNote failure={failure} />
      {sent && (
        <p role="status" data-test-sent={sent}>
          Accepted as <code>{sent}</code>: follow it in the message log.
        </p>
      )}
    </section>
  );
};
