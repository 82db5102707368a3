/**
 * What the Signal connector does beyond the connector contract, on the protocol-faithful fake of
 * signal-cli over both transports: received messages are never dropped (redeliveries keep their
 * id, a gateway that cannot record is retried in order, a lost channel is reopened), malformed
 * frames and non-message envelopes are skipped, and the daemon's answers map to the right outcome.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/eventually.ts';
import type { FakeSignalCli } from '../../../test/support/fake-signal-cli.ts';
import { BOT, envelopeFrom, quietLog, rpcFor, signalFixture, type Transport } from '../../../test/support/signal-fixture.ts';
import { BotIdentityMissingError, type InboundFromContact } from '../port.ts';
import { SignalConnector } from './signal-connector.ts';
import { SignalDaemonUnavailableError } from './signal-rpc.ts';

const CONTACT = '+15550100001';

describe.each<Transport>(['http', 'tcp'])('Signal connector over %s (fake signal-cli)', (transport) => {
  let fake: FakeSignalCli;
  let connector: SignalConnector;
  let teardown: () => Promise<void>;
  const received: InboundFromContact[] = [];

  beforeEach(async () => {
    const fixture = await signalFixture(transport);
    fake = fixture.fake;
    connector = fixture.connector as SignalConnector;
    teardown = fixture.teardown;
    received.length = 0;
  });
  afterEach(() => teardown());

  const listening = async (onInbound: (m: InboundFromContact) => Promise<void> = async (m) => void received.push(m)) => {
    await connector.listen(onInbound);
    await eventually(() => expect(fake.listeners).toBe(1), 5_000);
  };

  it('hands a redelivered message on again with the same external id, so that the gateway records it once', async () => {
    await listening();
    const envelope = envelopeFrom(CONTACT, 'twice', 1_700_000_000_123);
    fake.receive(BOT, envelope);
    fake.receive(BOT, envelope);
    await eventually(() => expect(received).toHaveLength(2));
    expect(received[0]!.externalId).toBeDefined();
    expect(received[1]!.externalId).toBe(received[0]!.externalId);
    expect(received[0]).toMatchObject({ contactId: CONTACT, text: 'twice', timestamp: 1_700_000_000_123 });
  });

  it('retries a message the gateway could not record, and keeps the order of the ones behind it', async () => {
    let failures = 3;
    await listening(async (message) => {
      if (message.text === 'first' && failures-- > 0) throw new Error('event store unavailable');
      received.push(message);
    });
    fake.receive(BOT, envelopeFrom(CONTACT, 'first', 1));
    fake.receive(BOT, envelopeFrom(CONTACT, 'second', 2));
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['first', 'second']));
  });

  it('skips malformed frames, receipts and typing indicators, and goes on', async () => {
    await listening();
    fake.writeRaw('event:receive\ndata:{not json\n\n', 'not json at all\n');
    fake.writeRaw('event:receive\ndata:{"account":"+15550009999"}\n\n', '{"jsonrpc":"2.0","method":"receive","params":{"account":"+15550009999"}}\n');
    fake.receive(BOT, { source: CONTACT, sourceNumber: CONTACT, sourceUuid: crypto.randomUUID(), timestamp: 5, receiptMessage: { when: 5, isDelivery: true, timestamps: [4] } });
    fake.receive(BOT, { source: CONTACT, sourceNumber: CONTACT, sourceUuid: crypto.randomUUID(), timestamp: 6, typingMessage: { action: 'STARTED', timestamp: 6 } });
    fake.receive(BOT, envelopeFrom(CONTACT, 'after the noise', 7));
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['after the noise']));
  });

  it('reopens a channel the daemon dropped and receives what comes after', async () => {
    await listening();
    const before = fake.connections;
    fake.dropConnections();
    await eventually(() => expect([fake.connections, fake.listeners]).toEqual([before + 1, 1]), 10_000);
    fake.receive(BOT, envelopeFrom(CONTACT, 'after the cut', 8));
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['after the cut']));
  });

  it("sends to a username as signal-cli's u: recipient", async () => {
    expect(await connector.deliver({ messageId: 'm1', from: BOT, contactId: 'relay_fan.42', text: 'hi' })).toEqual({ ok: true });
    expect(fake.sent.at(-1)).toMatchObject({ account: BOT, recipient: ['u:relay_fan.42'], message: 'hi' });
  });

  it("keeps the contact id out of a daemon's user error", async () => {
    fake.failNextCall(-1, `Invalid recipient ${CONTACT}: not found`);
    expect(await connector.deliver({ messageId: 'm2', from: BOT, contactId: CONTACT, text: 'hi' })).toEqual({
      ok: false,
      permanent: true,
      reason: 'signal-cli refused the message: Invalid recipient <contact>: not found',
    });
  });

  it('treats an I/O error of the daemon as transient', async () => {
    fake.failNextCall(-3, 'Failed to send message due to IO exception');
    expect(await connector.deliver({ messageId: 'm3', from: BOT, contactId: CONTACT, text: 'hi' })).toMatchObject({ ok: false, permanent: false });
  });

  it("reports a bot account the daemon no longer has as a missing identity, and a daemon that cannot be reached as unavailable (neither is the messenger's answer)", async () => {
    fake.removeAccount(BOT);
    await expect(connector.deliver({ messageId: 'm4', from: BOT, contactId: CONTACT, text: 'hi' })).rejects.toBeInstanceOf(BotIdentityMissingError);
    await fake.close();
    const gone = new SignalConnector({ rpc: rpcFor(transport, fake, 1_000), log: quietLog });
    await expect(gone.deliver({ messageId: 'm5', from: BOT, contactId: CONTACT, text: 'hi' })).rejects.toBeInstanceOf(SignalDaemonUnavailableError);
    await gone.close();
  });
});
