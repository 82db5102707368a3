/**
 * How an app's bot gets what contacts write: by poll, or by webhook (its URL, how Relay
 * authenticates to it, the Standard Webhooks signing secret shown once, rotation). A failure is
 * shown beside the field it is about, and a URL that is no http or https URL is refused before
 * it is sent.
 */
import { useState } from 'preact/hooks';
import { api, run } from '../api';
import type { components } from '../api/account-api';
import { FormError, TextField, useFormErrors, webhookUrlProblem, withinLimits } from '../forms';

type App = components['schemas']['App'];

/** The account API's limits of these fields (domain/shared/text.ts). */
const LIMITS = { webhookUrl: 2048, headerName: 64, secret: 1024 } as const;
const FIELDS = { webhookUrl: 'webhook-url', webhookAuthHeaderName: 'webhook-header', webhookAuthSecret: 'webhook-secret' } as const;

export const Delivery = (props: { app: App; onSaved: (app: App, signingSecret: string | undefined) => void }) => {
  const { app } = props;
  const [type, setType] = useState(app.deliveryType);
  const [url, setUrl] = useState(app.webhookUrl ?? '');
  const [authType, setAuthType] = useState<'none' | 'bearer' | 'header'>(app.webhookAuthType ?? 'none');
  const [secret, setSecret] = useState('');
  const [header, setHeader] = useState(app.webhookAuthHeaderName ?? '');
  const errors = useFormErrors('delivery', FIELDS);

  const save = async (event: Event, rotate = false) => {
    event.preventDefault();
    errors.clear();
    if (type === 'webhook') {
      const problem = webhookUrlProblem(url);
      if (problem) return errors.refuse(FIELDS.webhookUrl, problem);
      const limited = [
        [FIELDS.webhookUrl, url, LIMITS.webhookUrl],
        [FIELDS.webhookAuthHeaderName, header, LIMITS.headerName],
        [FIELDS.webhookAuthSecret, secret, LIMITS.secret],
      ] as const;
      if (!withinLimits(errors, limited)) return;
    }
    const webhook =
      type === 'webhook'
        ? {
            webhookUrl: url,
            webhookAuthType: authType === 'none' ? null : authType,
            ...(secret ? { webhookAuthSecret: secret } : {}),
            ...(authType === 'header' ? { webhookAuthHeaderName: header } : {}),
          }
        : {};
    const outcome = await run(api.POST('/dashboard/api/dashboard/apps/update', { body: { appId: app.id, deliveryType: type, ...webhook, ...(rotate ? { rotateWebhookSigningSecret: true } : {}) } }));
    if (!outcome.ok) return errors.show(outcome.failure);
    setSecret('');
    props.onSaved(outcome.data, outcome.data.webhookSigningSecret);
  };

  return (
    <form onSubmit={(e) => save(e)} aria-labelledby="delivery" noValidate>
      <h2 id="delivery">Delivery</h2>
      <fieldset>
        <legend>How your bot gets what contacts write</legend>
        <label class="inline">
          <input type="radio" name="delivery" value="poll" checked={type === 'poll'} onChange={() => setType('poll')} /> Poll (<code>GET /api/v1/messages/poll</code>)
        </label>
        <label class="inline">
          <input type="radio" name="delivery" value="webhook" checked={type === 'webhook'} onChange={() => setType('webhook')} /> Webhook (Relay posts each message to your URL)
        </label>
      </fieldset>
      {type === 'webhook' && (
        <>
          <TextField id={FIELDS.webhookUrl} label="Webhook URL" type="url" required value={url} onValue={setUrl} errors={errors} hint="An https:// address of your bot (http:// only where the operator allows it)." />
          <label for="webhook-auth">How Relay authenticates to your URL</label>
          <select id="webhook-auth" value={authType} onChange={(e) => setAuthType((e.target as HTMLSelectElement).value as 'none' | 'bearer' | 'header')}>
            <option value="none">Only the signature</option>
            <option value="bearer">Bearer token</option>
            <option value="header">A header of your choice</option>
          </select>
          {authType === 'header' && <TextField id={FIELDS.webhookAuthHeaderName} label="Header name" required value={header} onValue={setHeader} errors={errors} limit={LIMITS.headerName} />}
          {authType !== 'none' && (
            <TextField
              id={FIELDS.webhookAuthSecret}
              label={app.hasWebhookAuthSecret ? 'New secret (leave empty to keep the one set)' : 'Secret'}
              type="password"
              autocomplete="off"
              value={secret}
              onValue={setSecret}
              errors={errors}
              limit={LIMITS.secret}
            />
          )}
          <p class="muted">
            Deliveries are signed the Standard Webhooks way.{' '}
            {app.hasWebhookSigningSecret ? 'The signing secret was shown when it was made.' : 'Relay makes the signing secret when you save, and shows it once.'}
          </p>
        </>
      )}
      <button type="submit">Save delivery</button>
      {type === 'webhook' && app.hasWebhookSigningSecret && (
        <button type="button" onClick={(e) => save(e, true)}>
          Rotate the signing secret
        </button>
      )}
      <FormError errors={errors} />
    </form>
  );
};
