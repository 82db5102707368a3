/**
 * The JSON-RPC transports against the real signal-cli daemon (multi-account mode, no account: no
 * account can be registered or linked without Signal's servers). Every transport behaviour the
 * Signal connector relies on: answers matched by id, the daemon's errors with their codes, batches,
 * notifications, the event stream's late headers, and a daemon that goes away and comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/eventually.ts';
import { signalCliSkipReason, startSignalCliDaemon, type SignalCliDaemon } from '../../../test/support/signal-cli-daemon.ts';
import { HttpSignalRpc } from './http-signal-rpc.ts';
import { SignalDaemonError, SignalDaemonUnavailableError, type ChannelState, type SignalRpc } from './signal-rpc.ts';
import { TcpSignalRpc } from './tcp-signal-rpc.ts';

const skipReason = signalCliSkipReason();
if (skipReason) console.warn(`signal-cli suites skipped: ${skipReason}`);

const reconnect = { minMs: 100, maxMs: 500 };

describe.skipIf(skipReason !== '')('signal-cli transports against the real daemon', () => {
  let daemon: SignalCliDaemon;
  const clients: SignalRpc[] = [];
  const transports: Array<[string, () => SignalRpc]> = [
    ['HTTP', () => new HttpSignalRpc({ url: daemon.httpUrl, timeoutMs: 10_000, reconnect })],
    ['TCP', () => new TcpSignalRpc({ host: '127.0.0.1', port: daemon.tcpPort, timeoutMs: 10_000, reconnect })],
  ];
  const open = (make: () => SignalRpc) => {
    const client = make();
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    daemon = await startSignalCliDaemon();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await daemon?.stop();
  });

  describe.each(transports)('%s', (_name, make) => {
    it('answers calls with their results', async () => {
      const rpc = open(make);
      expect(await rpc.call('version')).toEqual({ version: '0.13.19' });
      expect(await rpc.call('listAccounts')).toEqual([]);
    });

    it("reports the daemon's errors with their codes and messages", async () => {
      const rpc = open(make);
      const error = (call: Promise<unknown>) => call.then(() => undefined, (e: unknown) => e);
      const noAccount = await error(rpc.call('send', { recipient: ['+15550000001'], message: 'x' }));
      expect(noAccount).toBeInstanceOf(SignalDaemonError);
      expect(noAccount).toMatchObject({ code: -32602, message: 'Method requires valid account parameter' });
      expect(await error(rpc.call('send', { account: '+15550000000', recipient: ['+15550000001'], message: 'x' }))).toMatchObject({
        code: -32602,
        message: 'Specified account does not exist',
      });
      expect(await error(rpc.call('noSuchMethod'))).toMatchObject({ code: -32601, message: 'Method not implemented' });
    });

    it('has the group methods the group administration calls (answered for an account, not as unknown methods)', async () => {
      const rpc = open(make);
      const error = (call: Promise<unknown>) => call.then(() => undefined, (e: unknown) => e);
      for (const [method, params] of [
        ['updateGroup', { name: 'Relay group' }],
        ['updateGroup', { groupId: Buffer.alloc(32, 1).toString('base64'), members: ['+15550000001'], link: 'enabled' }],
        ['listGroups', { groupId: [Buffer.alloc(32, 1).toString('base64')] }],
      ] as const)
        expect(await error(rpc.call(method, { account: '+15550000000', ...params }))).toMatchObject({ code: -32602, message: 'Specified account does not exist' });
    });

    it('matches many concurrent answers to their calls', async () => {
      const rpc = open(make);
      const calls = Array.from({ length: 40 }, (_, i) =>
        i % 3 === 0
          ? rpc.call('version').then((r) => ['version', r])
          : i % 3 === 1
            ? rpc.call('listAccounts').then((r) => ['listAccounts', r])
            : rpc.call('noSuchMethod').then(
                () => ['noSuchMethod', 'answered'],
                (e: SignalDaemonError) => ['noSuchMethod', e.code],
              ),
      );
      const answers = await Promise.all(calls);
      answers.forEach(([method, answer], i) => {
        expect(method).toBe(['version', 'listAccounts', 'noSuchMethod'][i % 3]);
        expect(answer).toEqual([{ version: '0.13.19' }, [], -32601][i % 3]);
      });
    });

    it('sends batches and gives each answer in the order of the calls', async () => {
      const rpc = open(make);
      const outcomes = await rpc.batch([{ method: 'version' }, { method: 'noSuchMethod' }, { method: 'listAccounts' }]);
      expect(outcomes[0]).toEqual({ ok: true, result: { version: '0.13.19' } });
      expect(outcomes[1]).toMatchObject({ ok: false, error: { code: -32601 } });
      expect(outcomes[2]).toEqual({ ok: true, result: [] });
    });

    it('sends notifications, which the daemon does not answer', async () => {
      const rpc = open(make);
      await expect(rpc.notify('version')).resolves.toBeUndefined();
      expect(await rpc.call('version')).toEqual({ version: '0.13.19' });
    });
  });

  it("opens the HTTP event stream although its headers only come with the daemon's first keep-alive", async () => {
    const rpc = open(() => new HttpSignalRpc({ url: daemon.httpUrl, timeoutMs: 1_000, reconnect }));
    const states: ChannelState[] = [];
    rpc.listen(() => undefined, (state) => states.push(state));
    // signal-cli 0.13.19 writes the first keep-alive about 15 s after the stream is opened; a
    // client that timed out waiting for the headers (the call timeout here is 1 s) never gets it.
    await eventually(() => expect(states).toEqual([{ open: true }]), 30_000);
  }, 40_000);

  it('opens the TCP channel at once', async () => {
    const rpc = open(() => new TcpSignalRpc({ host: '127.0.0.1', port: daemon.tcpPort, timeoutMs: 5_000, reconnect }));
    const states: ChannelState[] = [];
    rpc.listen(() => undefined, (state) => states.push(state));
    await eventually(() => expect(states).toEqual([{ open: true }]), 5_000);
  });

  it('fails calls as unavailable while the daemon is down, and works again once it is back, without a new client', async () => {
    const http = open(() => new HttpSignalRpc({ url: daemon.httpUrl, timeoutMs: 5_000, reconnect }));
    const tcp = open(() => new TcpSignalRpc({ host: '127.0.0.1', port: daemon.tcpPort, timeoutMs: 5_000, reconnect }));
    const tcpStates: ChannelState[] = [];
    tcp.listen(() => undefined, (state) => tcpStates.push(state));
    expect(await tcp.call('version')).toEqual({ version: '0.13.19' });
    await daemon.stop();
    for (const rpc of [http, tcp]) {
      const error = await rpc.call('version').then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(SignalDaemonUnavailableError);
    }
    expect(tcpStates).toContainEqual({ open: false, reason: 'the connection to the daemon was lost' });
    await daemon.restart();
    await eventually(async () => expect(await tcp.call('version')).toEqual({ version: '0.13.19' }), 20_000);
    expect(await http.call('version')).toEqual({ version: '0.13.19' });
    expect(tcpStates.at(-1)).toEqual({ open: true });
  }, 120_000);
});
