import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAccount, createApp, createKey, waitFor } from '../../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../../support/relay-process.ts';

let relay: RelayProcess | undefined;
const kafka = new Kafka({ clientId: 'analytics-test', brokers: inject('kafkaBrokers').split(','), logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `analytics-${randomUUID()}` });
afterAll(async () => {
  await consumer.disconnect();
  await relay?.stop();
  await relay?.cleanup();
});

describe('events.<category> on Kafka, for analytics consumers', () => {
  it('carries every event of a category in order, without secrets or key hashes', async () => {
    relay = await startRelayProcess();
    const prefix = relay.env.KAFKA_TOPIC_PREFIX!;
    const account = await createAccount(relay);
    const app = await createApp(relay, account, ['signal']);
    await createKey(relay, account, [app.appId]);

    // An analytics consumer of the deployment's topics, with plain kafkajs.
    const seen: Array<{ topic: string; key: string; value: any }> = [];
    const admin = kafka.admin();
    await admin.connect();
    const wanted = [`${prefix}events.app`, `${prefix}events.credential`];
    await waitFor(async () => (await admin.listTopics()).filter((t) => wanted.includes(t)).length === 2, 30_000, 'the event topics');
    await admin.disconnect();
    await consumer.connect();
    await consumer.subscribe({ topics: [`${prefix}events.app`, `${prefix}events.credential`], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ topic, message }) => void seen.push({ topic, key: message.key!.toString(), value: JSON.parse(message.value!.toString()) }) });
    await waitFor(() => seen.some((r) => r.value.type === 'CredentialCreated') && seen.some((r) => r.value.type === 'AppMessengerProvisioned'), 30_000, 'the events');

    const ofApp = seen.filter((r) => r.topic === `${prefix}events.app`);
    expect(ofApp.every((r) => r.key === `app-${app.appId}`)).toBe(true);
    expect(ofApp.map((r) => r.value.type).slice(0, 3)).toEqual(['AppCreated', 'AppMessengerAdded', 'AppMessengerProvisioned']);
    expect(ofApp.map((r) => Number(r.value.streamVersion))).toEqual(ofApp.map((_, i) => i + 1));
    expect(ofApp[0]!.value).toMatchObject({ streamName: `app-${app.appId}`, data: { appId: app.appId, name: 'Support bot' }, metadata: { actor: expect.any(String) } });
    const credential = seen.find((r) => r.value.type === 'CredentialCreated')!;
    expect(credential.value.data).not.toHaveProperty('keyHash');
    expect(credential.value.data).not.toHaveProperty('secretEncrypted');
    expect(credential.value.data.appIds).toEqual([app.appId]);
  });
});
