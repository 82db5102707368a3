/**
 * An app's quickstart: its id, how to make a key for it (the keys page with the app ticked), and
 * ready-to-copy curl and TypeScript snippets with the ids filled in; the API's reference at /docs.
 */
import type { components } from '../api/account-api';
import { BASE } from '../router';
import { CopyButton } from '../ui';

export const Quickstart = (props: { app: components['schemas']['App'] }) => {
  const { app } = props;
  const origin = location.origin;
  const messenger = app.protocol[0] ?? 'signal';
  const body = JSON.stringify({ messages: [{ appId: app.id, messenger, contactId: 'CONTACT_ID', message: 'hello' }] });
  const curl = `curl -s -H "authorization: Bearer $RELAY_KEY" -H 'content-type: application/json' \\\n  -d '${body}' \\\n  ${origin}/api/v1/messages/send\ncurl -s -H "authorization: Bearer $RELAY_KEY" ${origin}/api/v1/messages/poll`;
  const ts = `const relay = '${origin}/api/v1';
const headers = { authorization: \`Bearer \${process.env.RELAY_KEY}\`, 'content-type': 'application/json' };
await fetch(\`\${relay}/messages/send\`, {
  method: 'POST',
  headers,
  body: JSON.stringify({ messages: [{ appId: '${app.id}', messenger: '${messenger}', contactId: 'CONTACT_ID', message: 'hello' }] }),
});
const { messages } = await (await fetch(\`\${relay}/messages/poll\`, { headers })).json();`;
  return (
    <section aria-labelledby="quickstart" data-quickstart>
      <h2 id="quickstart">Quickstart</h2>
      <ol>
        <li>
          The app id: <code data-quickstart-app>{app.id}</code>
        </li>
        <li>
          <a href={`${BASE}/keys?app=${encodeURIComponent(app.id)}`}>Make an API key for this app</a> (type <code>api-key</code>; its secret is shown once), and set it as{' '}
          <code>RELAY_KEY</code>.
        </li>
        <li>
          Send and poll with curl <CopyButton text={curl} label="Copy the curl commands" />
          <pre data-snippet="curl">{curl}</pre>
        </li>
        <li>
          Or from TypeScript <CopyButton text={ts} label="Copy the TypeScript" />
          <pre data-snippet="typescript">{ts}</pre>
        </li>
        <li>
          Every route, field and error: <a href="/docs">the API reference</a>.
        </li>
      </ol>
    </section>
  );
};
