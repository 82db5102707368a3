import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let account: Account;
let appId: string;

beforeAll(async () => {
  // A send budget of 2 per key: the batch of 2 fits, a third message is refused with 429.
  relay = await startRelayProcess({ env: { RATE_LIMIT_SEND_FREE_PER_MIN: '2' } });
  account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'])).appId;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

const scrape = async () => {
  const res = await fetch(`${relay.url}/metrics`);
  return { status: res.status, headers: res.headers, text: await res.text() };
};

/** The value of the sample line that starts with `series` (name and labels), if there is one. */
const valueOf = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

const message = (text: string) => ({ appId, contactId: '+15550001', messenger: 'signal', message: text });

describe('GET /metrics', () => {
  it('counts a batch from acceptance to delivery, polls, and request durations, in the Prometheus text format', async () => {
    const { secret: key } = await createKey(relay, account, [appId]);
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [message('one'), message('two')] } });
    expect(sent.status).toBe(202);

    // Delivered, and the delivery group's offsets committed past both records.
    const delivered = await waitFor(
      async () => {
        const { text } = await scrape();
        return valueOf(text, 'relay_messages_delivered_total{messenger="signal"}') === 2 &&
          valueOf(text, 'relay_consumer_lag{group="delivery",topic="outbound.signal"}') === 0
          ? text
          : undefined;
      },
      15_000,
      'both messages delivered',
    );
    expect(delivered).toContain('relay_messages_failed_total{messenger="signal"} 0');

    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550002', '--text', 'hi'])).code).toBe(0);
    await waitFor(async () => ((await api(relay, 'GET', '/messages/poll', { key })).body.count === 1 ? true : undefined), 10_000, 'the inbound message');
    expect((await api(relay, 'GET', '/nowhere')).status).toBe(404);

    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
    const lines = res.text.split('\n');
    expect(lines).toContain('relay_messages_accepted_total{messenger="signal"} 2');
    expect(lines).toContain('relay_messages_delivered_total{messenger="signal"} 2');
    expect(lines).toContain('relay_messages_abandoned_total{messenger="signal"} 0');
    expect(lines).toContain('relay_poll_popped_total 1');
    expect(valueOf(res.text, 'relay_poll_requests_total')).toBeGreaterThanOrEqual(1);
    expect(lines).toContain('relay_broker_ready 1');
    expect(lines).toContain('relay_consumer_lag{group="delivery",topic="outbound.signal"} 0');
    expect(lines).toContain('relay_publisher_checkpoint_lag 0');
    expect(lines.some((l) => l.startsWith('relay_process_resident_memory_bytes '))).toBe(true);
    // Both threads' heaps (role `all`): the pipeline thread's under its own limit of about 1 GB.
    for (const thread of ['api', 'pipeline']) expect(valueOf(res.text, `relay_thread_heap_bytes{thread="${thread}",measure="used"}`)).toBeGreaterThan(0);
    expect(valueOf(res.text, 'relay_thread_heap_bytes{thread="pipeline",measure="limit"}')).toBeLessThan(1.1 * 1024 ** 3);
    expect(lines).toContainEqual(
      expect.stringMatching(/^relay_http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/api\/v1\/messages\/send",status_code="202"\} 1$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^relay_http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="404"\} 1$/),
    );
  });

  it('counts 429s by kind', async () => {
    const { secret: key } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'POST', '/messages/send', { key, body: { messages: [message('a'), message('b')] } })).status).toBe(202);
    expect((await api(relay, 'POST', '/messages/send', { key, body: { messages: [message('c')] } })).status).toBe(429);
    const { text } = await scrape();
    expect(text.split('\n')).toContain('relay_rate_limit_rejections_total{kind="send"} 1');
    expect(text.split('\n')).toContain('relay_rate_limit_rejections_total{kind="poll"} 0');
  });

  it('is neither under the API prefix nor in the OpenAPI document', async () => {
    expect((await api(relay, 'GET', '/metrics')).status).toBe(404);
    const doc = (await (await fetch(`${relay.url}/docs/json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).not.toContain('/metrics');
  });

  it('a delivery process of its own serves its metrics on its port, and nothing else', async () => {
    const delivery = await startRelayProcess({ role: 'delivery', waitFor: 'port', dataDir: relay.dataDir, env: { RATE_LIMIT_SEND_FREE_PER_MIN: '2' } });
    try {
      const res = await fetch(`${delivery.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const lines = (await res.text()).split('\n');
      expect(lines).toContain('relay_broker_ready 1');
      expect(lines.some((l) => l.startsWith('relay_messages_delivered_total{messenger="signal"} '))).toBe(true);
      expect((await fetch(`${delivery.url}/api/v1/health`)).status).toBe(404);
    } finally {
      await delivery.stop();
    }
  });
});

describe('GET /metrics behind METRICS_TOKEN, on a listener of its own (issue 23, item 9)', () => {
  it('answers only the bearer token, on METRICS_HOST:METRICS_PORT, and nothing on the public port', async () => {
    const { freePort } = await import('../support/relay-process.ts');
    const metricsPort = await freePort();
    const token = 'scraper-token-0123456789';
    const guarded = await startRelayProcess({ env: { METRICS_TOKEN: token, METRICS_PORT: String(metricsPort) } });
    try {
      const at = `http://127.0.0.1:${metricsPort}/metrics`;
      const refused = await fetch(at);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await refused.json()).toEqual({ error: 'A metrics token is required (Authorization: Bearer <METRICS_TOKEN>)' });
      expect((await fetch(at, { headers: { authorization: `Bearer ${token}x` } })).status).toBe(401);
      const scraped = await fetch(at, { headers: { authorization: `Bearer ${token}` } });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain('relay_http_request_duration_seconds');
      // Not on the public port any more.
      expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
      // The token never shows in the process's output.
      expect(guarded.output()).not.toContain(token);
    } finally {
      await guarded.stop();
      await guarded.cleanup();
    }
  });

  it('refuses a token that is too short, naming the setting and not the value', async () => {
    const { runCli } = await import('../support/relay-process.ts');
    const result = await runCli(['start'], { DATA_DIR: relay.dataDir, PORT: '0', METRICS_TOKEN: 'short' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('relay: Invalid configuration METRICS_TOKEN=(withheld, 5 characters): must be 16 to 256 printable ASCII characters without spaces\n');
    expect(result.stderr).not.toContain('short');
  });
});
