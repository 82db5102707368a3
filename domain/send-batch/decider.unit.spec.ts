import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { AcceptMessages } from './commands.ts';
import { sendBatchDecider } from './decider.ts';
import type { SendBatchEvent } from './events.ts';
import type { AcceptedMessage, SealedBodies } from './message.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(sendBatchDecider);
const messages: AcceptedMessage[] = [
  { messageId: 'm1', appId: 'app_1', messenger: 'signal', keyId: 'k1' },
  { messageId: 'm2', appId: 'app_2', messenger: 'simplex', keyId: 'k2' },
];
const bodies: SealedBodies[] = [
  { keyId: 'k1', appId: 'app_1', sealed: 's1:one' },
  { keyId: 'k2', appId: 'app_2', sealed: 's1:two' },
];
const accept = (list: AcceptedMessage[], sealed = bodies): AcceptMessages => ({
  type: 'AcceptMessages',
  data: { batchId: 'b1', credentialId: 'cred_1', userId: 'usr_1', messages: list, bodies: sealed, now },
});
const accepted: SendBatchEvent = {
  type: 'MessagesAccepted',
  data: { batchId: 'b1', credentialId: 'cred_1', userId: 'usr_1', messages, bodies, acceptedAt: now.toISOString() },
};

describe('send batch decider', () => {
  it('records the accepted messages of a call as one event', () => spec.given([]).when(accept(messages)).then([accepted]));

  it('records nothing for a call without valid messages', () => spec.given([]).when(accept([])).thenNothingHappens());

  it('refuses a message whose body is not sealed in the batch, for its app', () => {
    spec.given([]).when(accept(messages, bodies.slice(0, 1))).thenFails('validation', 'Every message needs its sealed body');
    spec.given([]).when(accept(messages, [bodies[0]!, { ...bodies[1]!, appId: 'app_1' }])).thenFails('validation', 'Every message needs its sealed body');
  });

  it('refuses to record a batch twice', () => spec.given([accepted]).when(accept(messages)).thenFails('conflict', 'Batch already recorded'));
});
