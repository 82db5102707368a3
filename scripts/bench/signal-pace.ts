/**
 * Delivery at the daemon's own pace (issue 28, item 4): the real signal-cli 0.13.19 against
 * Signal's mock server (test/support/signal-mock-server.ts), a mock contact decrypting every
 * message. First signal-cli's own JSON-RPC `send`, driven directly (the anchor), then the same
 * number of messages sent through Relay's public API to the same contact: messages per second the
 * contact received in each case, from the first request to the last message decrypted.
 * Both sides send one message per `send` call; the anchor keeps `inFlight` calls going at once,
 * as many as Relay's delivery worker hands the daemon at once (DELIVERY_BATCH). Both are warmed up
 * before either is timed (signal-cli's JIT: its first hundred sends are slower; a fresh Relay's JIT
 * and connections), so that the order of the two does not favour either. Then `rounds` alternating
 * pairs (the anchor, then Relay), and the ratio is the median of the pairs' ratios, as the bench's
 * other paired measures: one pair of ~1.3 s each read 0.79× in a bench run and 1.06–1.19× alone.
 */
import { mockSignalCliClasspath } from '../../test/support/signal-cli-mock-config.ts';
import { findJava21, startSignalCliDaemon } from '../../test/support/signal-cli-daemon.ts';
import { startSignalMock, type PrimaryDevice } from '../../test/support/signal-mock-server.ts';
import { startRelayProcess } from '../../test/support/relay-process.ts';
import { createAccount, createKey, dashboard } from '../../test/support/account-fixture.ts';
import { DELIVERY_BATCH } from '../../apps/pipeline/delivery-worker.ts';
import { percentile } from './measures.ts';

export interface SignalPaceFigures {
  readonly messages: number;
  readonly daemonPerSecond: number;
  readonly relayPerSecond: number;
  /** The median of the pairs' ratios (Relay / the daemon's own). */
  readonly ratio: number;
  /** Alternating pairs measured. */
  readonly rounds: number;
  /** signal-cli's `send` calls the anchor kept going at once. */
  readonly inFlight: number;
}

const median = (values: number[]) => percentile(values, 50);

const rpc = async (url: string, method: string, params?: Record<string, unknown>) => {
  const res = await fetch(`${url}/api/v1/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const answer = (await res.json()) as { result?: unknown; error?: { message: string; data?: unknown } };
  // signal-cli says why a send failed in the error's data (each recipient's result).
  if (answer.error) throw new Error(`signal-cli ${method}: ${answer.error.message}${answer.error.data === undefined ? '' : ` ${JSON.stringify(answer.error.data)}`}`);
  return answer.result;
};

/** Waits until the contact decrypted `count` messages; returns when the last one came. */
const received = async (contact: PrimaryDevice, count: number, timeoutMs: number): Promise<number> => {
  const deadline = Date.now() + timeoutMs;
  for (let got = 0; got < count; got++) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`signal pace: the contact decrypted ${got} of ${count}`);
    // The timer goes with the wait: left running, 1,200 of them kept the bench alive minutes after its last figure.
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([contact.waitForMessage(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`signal pace: the contact decrypted ${got} of ${count}`)), left)))]);
    } finally {
      clearTimeout(timer);
    }
  }
  return Date.now();
};

/** Sends `count` messages straight through signal-cli, `inFlight` calls at a time. */
const sendDirect = async (url: string, account: string, recipient: string[], count: number, inFlight: number, label: string) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const i = next++;
        await rpc(url, 'send', { account, recipient, message: `${label} ${i}` });
      }
    }),
  );
};

export const measureSignalPace = async (messages = 200, inFlight = DELIVERY_BATCH, warmUp = 100, rounds = 3): Promise<SignalPaceFigures> => {
  const java = findJava21();
  if (!('javaHome' in java)) throw new Error(java.missing);
  const signal = await startSignalMock();
  const daemon = await startSignalCliDaemon({ classpathFirst: mockSignalCliClasspath({ javaHome: java.javaHome, mockUrl: signal.url }) });
  try {
    const phone = await signal.server.createPrimaryDevice({ profileName: 'Bench bot' });
    const contact = await signal.server.createPrimaryDevice({ profileName: 'Bench contact' });
    const provision = signal.server.waitForProvision();
    const { deviceLinkUri } = (await rpc(daemon.httpUrl, 'startLink')) as { deviceLinkUri: string };
    const finished = rpc(daemon.httpUrl, 'finishLink', { deviceLinkUri, deviceName: 'bench' });
    await (await provision).complete({ provisionURL: deviceLinkUri, primaryDevice: phone });
    await finished;
    const account = phone.device.number;
    const recipient = [contact.device.aci];
    // Sessions, profile and the JIT warmed up: not counted.
    await rpc(daemon.httpUrl, 'send', { account, recipient, message: 'warm-up' });
    await received(contact, 1, 60_000);
    await sendDirect(daemon.httpUrl, account, recipient, messages, inFlight, 'warm-up');
    await received(contact, messages, 300_000);

    // Relay: the same contact, the same account bound to an app-messenger, sends through the public API.
    const relay = await startRelayProcess({ env: { SIGNAL_CLI_URL: daemon.httpUrl, RATE_LIMIT_SEND_FREE_PER_MIN: '100000', LOG_LEVEL: 'warn' } });
    try {
      const owner = await createAccount(relay);
      const created = await dashboard(relay, owner, 'POST', '/apps', { name: 'Bench bot', protocol: ['signal'] });
      const bound = await relay.cli(['signal', 'bind', '--app-messenger', created.body.messengers[0].id, '--account', account]);
      if (bound.code !== 0) throw new Error(`signal pace: bind failed: ${bound.stderr}`);
      const key = (await createKey(relay, owner, [created.body.id])).secret;
      const sendThroughRelay = async (count: number, label: string) => {
        for (let sent = 0; sent < count; sent += 50) {
          const batch = Array.from({ length: Math.min(50, count - sent) }, (_, i) => ({ appId: created.body.id, messenger: 'signal', contactId: contact.device.aci, message: `${label} ${sent + i}` }));
          const res = await fetch(`${relay.url}/api/v1/messages/send`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: batch }) });
          if (res.status !== 202) throw new Error(`signal pace: send answered ${res.status}`);
        }
      };
      // Relay warmed up too (a fresh process: its JIT, its connections to the daemon), and only
      // then either side timed: the daemon's JIT goes on warming up while Relay's warm-up runs
      // through it, which would favour whichever side is timed second.
      await sendThroughRelay(warmUp, 'relay warm-up');
      await received(contact, warmUp, 300_000);

      const daemonRates: number[] = [];
      const relayRates: number[] = [];
      for (let round = 0; round < rounds; round++) {
        // The anchor: signal-cli's own send, `inFlight` calls at a time.
        const daemonStart = Date.now();
        await sendDirect(daemon.httpUrl, account, recipient, messages, inFlight, `direct ${round}`);
        daemonRates.push(messages / (((await received(contact, messages, 300_000)) - daemonStart) / 1000));

        const relayStart = Date.now();
        await sendThroughRelay(messages, `relay ${round}`);
        relayRates.push(messages / (((await received(contact, messages, 300_000)) - relayStart) / 1000));
      }
      return {
        messages,
        inFlight,
        rounds,
        daemonPerSecond: median(daemonRates),
        relayPerSecond: median(relayRates),
        ratio: median(relayRates.map((rate, i) => rate / daemonRates[i]!)),
      };
    } finally {
      await relay.stop();
      await relay.cleanup();
    }
  } finally {
    await daemon.stop();
    await signal.close();
  }
};

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const figures = await measureSignalPace(Number(process.argv[2] ?? 200));
  console.log(JSON.stringify(figures));
  process.exit(0);
}
