import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseTrustProxy, TRUST_PROXY_RULE } from './trust-proxy.ts';
import { secretsFromFiles, type SecretFileSetting } from './secret-settings.ts';

/**
 * Relay's configuration: environment variables, overridden by flags of the same name in kebab
 * case (`DATA_DIR` ↔ `--data-dir`), but for secrets, which never come as flags and may come from
 * a file (`<NAME>_FILE`, secret-settings.ts). A bad value stops start-up with one line naming the
 * variable.
 */
const integer = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const optionalUrl = z.string().url().optional();

export const configSchema = z.object({
  PORT: integer(8080).pipe(z.number().max(65_535)),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** `/metrics` on a listener of its own (METRICS_HOST:METRICS_PORT) instead of PORT: for a scraper on the operator's network only. */
  METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** When set, `/metrics` answers only `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{16,256}$/, 'must be 16 to 256 printable ASCII characters without spaces').optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  EVENT_STORE: z.enum(['sqlite', 'postgres', 'eventstoredb']).default('sqlite'),
  DATABASE_URL: optionalUrl,
  DATABASE_SCHEMA: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a PostgreSQL identifier').default('relay'),
  EVENTSTORE_URL: z.string().optional(),
  EVENTSTORE_NAMESPACE: z.string().regex(/^([A-Za-z0-9]{1,63}[_.:])?$/, 'must be letters or digits followed by _, . or :').default(''),
  BROKER: z.enum(['embedded', 'kafka']).default('embedded'),
  KAFKA_BROKERS: z
    .string()
    .regex(/^[^,:\s]+:\d{1,5}(,[^,:\s]+:\d{1,5})*$/, 'must be comma-separated host:port pairs')
    .optional(),
  KAFKA_PARTITIONS: integer(3, 1),
  KAFKA_TOPIC_PREFIX: z.string().regex(/^[A-Za-z0-9._-]{0,100}$/, 'must be letters, digits, dots, dashes or underscores').default(''),
  SQLITE_SYNCHRONOUS: z.enum(['off', 'normal', 'full', 'extra']).default('full'),
  /** Role `all`: how the pipeline's worker thread is scheduled (Linux): a nice value, 0 the API thread's own priority, or `idle` (SCHED_IDLE) (apps/pipeline/thread-priority.ts). */
  PIPELINE_THREAD_NICE: z
    .union([z.literal('idle'), z.coerce.number().int().min(0).max(19)], { error: 'must be idle or a nice value from 0 to 19' })
    .default(19),
  /** Role `all`: the most the pipeline thread's old generation may hold, in MB (apps/pipeline/pipeline-thread.ts). */
  PIPELINE_THREAD_HEAP_MB: integer(1024, 128),
  /** Role `all`: the pipeline thread's young generation, in MB (apps/pipeline/pipeline-thread.ts). */
  PIPELINE_THREAD_YOUNG_MB: integer(8, 1),
  RATE_LIMIT_POLL_PER_MIN: integer(100, 1),
  RATE_LIMIT_SEND_FREE_PER_MIN: integer(600, 1),
  RATE_LIMIT_SEND_PAID_PER_MIN: integer(2000, 1),
  RATE_LIMIT_VERIFY_PER_MIN: integer(6000, 1),
  RATE_LIMIT_WINDOW_MS: integer(60_000, 1),
  RATE_LIMIT_EVICT_INTERVAL_MS: integer(300_000, 1),
  /**
   * A shared event store (PostgreSQL, EventStoreDB) that has not answered for this long: this
   * instance gives its leased roles and, when it has no unrecorded hand-off, its delivery
   * partitions to the other instances until it answers again (apps/pipeline/store-away.ts); 0 never.
   */
  STORE_AWAY_YIELD_MS: integer(15_000, 0),
  DELIVERY_MAX_ATTEMPTS: integer(3, 1),
  DELIVERY_BACKOFF_BASE_MS: integer(1000, 0),
  DELIVERY_BACKOFF_FACTOR: z.coerce.number().min(1).default(4),
  /** How long a message waits for its bot's identity to be on its daemon (bound, linked) before it is abandoned; at most the retention. */
  DELIVERY_IDENTITY_WAIT_MINUTES: z.coerce.number().positive().max(24 * 365 * 60).default(60),
  MESSAGE_RETENTION_HOURS: z.coerce.number().positive().max(24 * 365).default(24),
  BODY_SHRED_INTERVAL_MS: integer(1000, 10),
  /** How often each messenger daemon is asked whether it answers and which accounts it has. */
  MESSENGER_HEALTH_INTERVAL_MS: integer(10_000, 50),
  /** How often the member list of every app-messenger's group is read from its messenger. */
  GROUP_SYNC_INTERVAL_MS: integer(60_000, 50),
  /** The periodic group sync reads at most this many groups a second (its cost bounded, whatever the number of groups). */
  GROUP_SYNC_PER_SECOND: integer(5, 1),
  /** How long a group route waits for the messenger's answer before it answers 202 (the change goes on). */
  GROUP_CHANGE_WAIT_MS: integer(5000, 0),
  /** Group changes (the five routes that change a group or make one) a user may ask for per minute. */
  GROUP_CHANGES_PER_MIN: integer(30, 1),
  DASHBOARD_BACKEND_URL: optionalUrl,
  DASHBOARD_TIMEOUT_MS: integer(8000, 1),
  SESSION_TTL_HOURS: integer(24 * 30, 1),
  /** Where users reach this Relay: the base of the links it mails. */
  PUBLIC_URL: z.string().url().optional(),
  /** Mail for e-mail sign-in: `smtp://user:pass@host:587` or `smtps://…`. Without it, e-mail sign-in says it is not available. */
  SMTP_URL: optionalUrl,
  /** Behind reverse proxies: which of them say the client's address and protocol (X-Forwarded-For, X-Forwarded-Proto): `true` (one), a number of hops, or their addresses (trust-proxy.ts). */
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value, context) => {
      const parsed = parseTrustProxy(value);
      if (parsed === undefined) context.addIssue({ code: 'custom', message: TRUST_PROXY_RULE });
      return parsed ?? false;
    }),
  MAIL_FROM: z.string().min(3).max(320).default('Relay <relay@localhost>'),
  SIGN_IN_LINK_TTL_SECONDS: integer(900, 1),
  /** Without SMTP_URL: the address whose one-time sign-in link `relay start` prints for the operator. */
  OPERATOR_EMAIL: z.string().max(320).default('operator@relay.localhost'),
  /** How long a `/signin` or `/link` code shown in the dashboard can be sent to a bot. */
  MESSENGER_CODE_TTL_SECONDS: integer(600, 1),
  /** The app whose bots send alerts to the messenger contacts users linked (an app of the operator's). */
  NOTIFICATION_APP_ID: z.string().regex(/^app_[0-9a-f]{24}$/, 'must be an app id (app_ followed by 24 hex digits)').optional(),
  /** Sign-in attempts per 15 minutes, per address and per client. */
  SIGN_IN_PER_ADDRESS: integer(5, 1),
  SIGN_IN_PER_CLIENT: integer(20, 1),
  MAX_CREDENTIALS_PER_USER: integer(10, 1),
  /** The shortest overlap an owner may give the old key when rolling one (a week is the longest): an hour; less for tests. */
  CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS: integer(3600, 1).pipe(z.number().max(3600)),
  MAX_APPS_PER_USER: integer(25, 1),
  EVENTS_MAX_STREAMS_PER_KEY: integer(5, 1),
  EVENTS_MAX_STREAMS_PER_USER: integer(10, 1),
  EVENTS_MAX_STREAMS: integer(200, 1),
  /** Webhook delivery of inbound messages (docs/webhooks.md). */
  WEBHOOK_TIMEOUT_MS: integer(10_000, 100),
  WEBHOOK_MAX_ATTEMPTS: integer(8, 1),
  WEBHOOK_BACKOFF_BASE_MS: integer(1000, 0),
  WEBHOOK_BACKOFF_MAX_MS: integer(300_000, 0),
  WEBHOOK_IDLE_POLL_MS: integer(1000, 10),
  WEBHOOK_ALLOW_LOCAL: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
  /** After a rotation, how long the replaced signing secret still signs beside the new one. */
  WEBHOOK_SECRET_OVERLAP_HOURS: z.coerce.number().min(0).max(24 * 30).default(24),
  /** Billing (docs/billing.md): the currency and price of the paid tier, the discount for a year. */
  BILLING_CURRENCY: z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter currency code (ISO 4217)').default('USD'),
  BILLING_PAID_MONTHLY_PRICE: z.string().regex(/^\d{1,9}(\.\d{1,2})?$/, 'must be a price with at most two decimals').default('5.00'),
  BILLING_ANNUAL_DISCOUNT_PERCENT: integer(20, 0).pipe(z.number().max(90)),
  /** Where invoices are paid: nowhere (no asset offered), the simulator (`relay simulate pay`), or a Monero wallet. */
  PAYMENT_PROCESSOR: z.enum(['none', 'simulator', 'monero', 'bitcoin']).default('none'),
  /** The price of one coin of the processor's asset in BILLING_CURRENCY, set by the operator (no price feed): fixed into each invoice when it is made. */
  BILLING_RATE: z.string().regex(/^\d{1,12}(\.\d{1,8})?$/, 'must be a positive decimal with at most eight decimals').optional(),
  /** monero-wallet-rpc of the merchant's watch-only wallet; a Digest login goes in the URL (`http://user:pass@127.0.0.1:18082`). */
  MONERO_WALLET_RPC_URL: optionalUrl,
  MONERO_NETWORK: z.enum(['mainnet', 'stagenet', 'testnet', 'regtest']).default('mainnet'),
  MONERO_ACCOUNT_INDEX: integer(0, 0),
  /** A Bitcoin Core (or Litecoin Core) node's RPC at the merchant's watch-only wallet: `http://user:pass@127.0.0.1:8332/wallet/merchant`. */
  BITCOIN_RPC_URL: optionalUrl,
  BITCOIN_NETWORK: z.string().regex(/^[a-z]{1,20}$/, 'must be a network name such as main, test, signet or regtest').default('main'),
  BITCOIN_ASSET: z.enum(['BTC', 'LTC']).default('BTC'),
  /** Confirmations a payment needs before its invoice is paid (Monero's outputs unlock at 10). */
  PAYMENT_CONFIRMATIONS: integer(10, 1),
  /** How long an invoice waits for its amount, and then for its payments' confirmations. */
  INVOICE_TTL_SECONDS: integer(3600, 1),
  INVOICE_MONITORING_SECONDS: integer(24 * 3600, 1),
  /** How often the payment processor is read for the open invoices' payments. */
  PAYMENT_WATCH_INTERVAL_MS: integer(5000, 50),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RELAY_SECRET_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)')
    .optional(),
  /** signal-cli's daemon: http://HOST:PORT (daemon --http) or tcp://HOST:PORT (daemon --tcp). */
  SIGNAL_CLI_URL: z
    .string()
    .regex(/^(https?|tcp):\/\/[^/?#\s]+\/?$/i, 'must be http://HOST:PORT or tcp://HOST:PORT (signal-cli daemon --http or --tcp)')
    .optional(),
  /** The daemon's --receive-mode: with `manual` (TCP only) Relay subscribes while it listens, so nothing is received while it is away. */
  SIGNAL_CLI_RECEIVE_MODE: z.enum(['on-start', 'manual']).default('on-start'),
  /**
   * How often the daemon's accounts are listed, so that one linked or bound while Relay runs gets a
   * subscription (TCP, manual mode) or an event stream (HTTP) of its own. On HTTP in on-start mode,
   * a message the daemon receives for a new account before then is not handed to Relay.
   */
  SIGNAL_CLI_ACCOUNT_WATCH_MS: integer(1000, 50),
  /** How long a call to signal-cli may wait for its answer (a send waits for Signal's servers). */
  SIGNAL_CLI_TIMEOUT_MS: integer(30_000, 100),
  /** simplex-chat's WebSocket API: ws://HOST:PORT (simplex-chat -p PORT). */
  SIMPLEX_WS_URL: z
    .string()
    .regex(/^wss?:\/\/[^/?#\s]+\/?$/i, 'must be ws://HOST:PORT (simplex-chat -p PORT)')
    .optional(),
  /** How long a command to simplex-chat may wait for its answer. */
  SIMPLEX_TIMEOUT_MS: integer(30_000, 100),
  /** Refused: there is no Session daemon; Relay is its own Session client (SESSION_NETWORK). */
  SESSION_CLIENT_URL: z.string().optional(),
  /** `on`: Relay's own Session client on the Session network; `off`: Session on the simulator. */
  SESSION_NETWORK: z.enum(['on', 'off']).default('off'),
  /** Seed nodes the service-node list is first fetched from: comma-separated https URLs (the real seeds when unset). */
  SESSION_SEED_NODES: z
    .string()
    .regex(/^https:\/\/[^\s,/?#]+\/?(,https:\/\/[^\s,/?#]+\/?)*$/i, 'must be comma-separated https://HOST[:PORT] URLs')
    .optional(),
  /** A PEM file of the seed nodes' certificate(s); replaces the real seeds' pinned certificates (needed with SESSION_SEED_NODES). */
  SESSION_SEED_CA: z.string().min(1).optional(),
  /** `onion`: every request to a storage server travels a three-hop onion path, as Session's apps send them; `direct`: plain HTTPS, which shows the servers this machine's IP address. */
  SESSION_TRANSPORT: z.enum(['onion', 'direct']).default('onion'),
  /** Take storage-server addresses that are not public (loopback, private networks) from the network's answers: a test network on one machine only. */
  SESSION_ALLOW_PRIVATE_NODES: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
  /** Service nodes three pool nodes must agree on for a pool refresh (else the seeds are asked again). */
  SESSION_POOL_AGREEMENT: integer(24, 1),
  /** How long one request to a seed or storage server may take. */
  SESSION_TIMEOUT_MS: integer(10_000, 100),
  /** Each bot's swarm is polled every SESSION_POLL_MIN_MS while messages come, doubling while idle up to SESSION_POLL_MAX_MS. */
  SESSION_POLL_MIN_MS: integer(2000, 10),
  SESSION_POLL_MAX_MS: integer(16_000, 10),
  /** `new`: Relay makes each Session app-messenger's identity; `import`: they wait until an operator imports one (relay session-messenger import). */
  SESSION_IDENTITIES: z.enum(['new', 'import']).default('new'),
  /** A JSON file of settings (below); the environment and flags override it. */
  CONFIG_FILE: z.string().optional(),
});

export type Config = z.infer<typeof configSchema> & { readonly dataDir: string };
export type ConfigKey = keyof z.infer<typeof configSchema>;
export const CONFIG_KEYS = Object.keys(configSchema.shape) as ConfigKey[];

export const flagName = (key: string) => key.toLowerCase().replaceAll('_', '-');

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Settings whose value is a secret: an error names them but never shows their value. */
const WITHHELD_SETTINGS: ReadonlySet<ConfigKey> = new Set(['RELAY_SECRET_KEY', 'METRICS_TOKEN']);

/** A URL's user name and password, wherever they appear in a value (`postgres://bob:***@db`). */
export const redactUserInfo = (text: string): string => text.replace(/(\/\/)[^/@\s]*@/g, '$1***@');

/** How a bad value is shown in an error: secrets withheld, passwords in URLs masked, long values cut. */
const shown = (key: ConfigKey, value: string): string => {
  if (WITHHELD_SETTINGS.has(key)) return `(withheld, ${value.length} characters)`;
  const safe = redactUserInfo(value);
  return JSON.stringify(safe.length > 200 ? `${safe.slice(0, 200)}…` : safe);
};

/**
 * `CONFIG_FILE`: a JSON object of settings by their variable names (`{"BILLING_CURRENCY": "EUR",
 * "PAYMENT_PROCESSOR": "monero"}`), for what an operator would rather keep in a file; the
 * environment and flags override it.
 */
const settingsFile = (file: string | undefined): Record<string, string> => {
  if (file === undefined || file === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`Invalid configuration CONFIG_FILE=${JSON.stringify(file.slice(0, 200))}: ${error instanceof SyntaxError ? 'not JSON' : 'cannot be read'}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`Invalid configuration CONFIG_FILE=${JSON.stringify(file.slice(0, 200))}: must be a JSON object of settings`);
  const settings: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(CONFIG_KEYS as string[]).includes(key) || key === 'CONFIG_FILE') throw new ConfigError(`Invalid configuration CONFIG_FILE: unknown setting ${JSON.stringify(key.slice(0, 60))}`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') throw new ConfigError(`Invalid configuration CONFIG_FILE: ${key} must be a string, a number or a boolean`);
    settings[key] = String(value);
  }
  return settings;
};

/**
 * Reads the configuration; `flags` maps config keys to flag values that override the environment.
 * Secrets (secret-settings.ts) never come as flags: from the environment, CONFIG_FILE, or the file
 * their `<NAME>_FILE` names.
 */
export const loadConfig = (env: NodeJS.ProcessEnv, flags: Partial<Record<ConfigKey | SecretFileSetting, string>> = {}): Config => {
  const fromFile = settingsFile(flags.CONFIG_FILE ?? env.CONFIG_FILE);
  const secrets = secretsFromFiles(env, flags, fromFile);
  if (!secrets.ok) throw new ConfigError(secrets.flag ? secrets.refusal : `Invalid configuration ${secrets.refusal}`);
  const raw: Record<string, string> = {};
  for (const key of CONFIG_KEYS) {
    const value = flags[key] ?? (secrets.values as Partial<Record<ConfigKey, string>>)[key] ?? env[key] ?? fromFile[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0]);
    throw new ConfigError(`Invalid configuration ${key}=${shown(key as ConfigKey, raw[key] ?? '')}: ${issue.message}`);
  }
  const config = parsed.data;
  if (config.EVENT_STORE === 'postgres' && !config.DATABASE_URL)
    throw new ConfigError('Invalid configuration DATABASE_URL: required when EVENT_STORE=postgres');
  if (config.EVENT_STORE === 'eventstoredb' && !config.EVENTSTORE_URL)
    throw new ConfigError('Invalid configuration EVENTSTORE_URL: required when EVENT_STORE=eventstoredb');
  if (config.EVENT_STORE === 'eventstoredb' && !config.DATABASE_URL)
    throw new ConfigError('Invalid configuration DATABASE_URL: required when EVENT_STORE=eventstoredb (its data keys live in PostgreSQL)');
  if (config.BROKER === 'kafka' && !config.KAFKA_BROKERS)
    throw new ConfigError('Invalid configuration KAFKA_BROKERS: required when BROKER=kafka');
  if (config.SESSION_POLL_MAX_MS < config.SESSION_POLL_MIN_MS)
    throw new ConfigError(`Invalid configuration SESSION_POLL_MAX_MS=${config.SESSION_POLL_MAX_MS}: must be at least SESSION_POLL_MIN_MS (${config.SESSION_POLL_MIN_MS})`);
  if (config.PAYMENT_PROCESSOR !== 'none' && (!config.BILLING_RATE || /^[0.]+$/.test(config.BILLING_RATE)))
    throw new ConfigError(`Invalid configuration BILLING_RATE: a price of one coin above zero is required when PAYMENT_PROCESSOR=${config.PAYMENT_PROCESSOR}`);
  if (config.PAYMENT_PROCESSOR === 'bitcoin' && !config.BITCOIN_RPC_URL)
    throw new ConfigError('Invalid configuration BITCOIN_RPC_URL: required when PAYMENT_PROCESSOR=bitcoin');
  if (config.PAYMENT_PROCESSOR === 'monero' && !config.MONERO_WALLET_RPC_URL)
    throw new ConfigError('Invalid configuration MONERO_WALLET_RPC_URL: required when PAYMENT_PROCESSOR=monero');
  return { ...config, dataDir: path.resolve(config.DATA_DIR) };
};

/** How long a message body stays readable at most, and its queue records are kept (docs/privacy.md). */
export const messageRetentionMs = (config: Config): number => config.MESSAGE_RETENTION_HOURS * 3_600_000;
