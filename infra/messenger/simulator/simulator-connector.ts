import { createHash } from 'node:crypto';
import type { DeliveryResult, GroupAdministration, InboundFromContact, Messenger, MessengerConnector, OutboundDelivery } from '../port.ts';
import { SimulatorGroups } from './simulator-groups.ts';
import { rejectionOf } from '../messenger-rules.ts';
import type { SimulatorStore } from './simulator-store.ts';

const digits = (seed: string, count: number) => {
  const hash = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; out.length < count; i++) out += String(hash[i % hash.length]! % 10);
  return out;
};

/** A bot identity in the messenger's own format, stable for an app-messenger id. */
export const simulatedAddress = (messenger: Messenger, appMessengerId: string): string => {
  switch (messenger) {
    case 'signal':
      return `+1555${digits(appMessengerId, 7)}`;
    case 'simplex':
      return `9${digits(appMessengerId, 11)}`;
    case 'session':
      return `05${createHash('sha256').update(appMessengerId).digest('hex')}`;
  }
};

/**
 * The default connector of every messenger: it checks what the messenger would check (contact
 * format, length), records each delivery, fails on request (for tests and demos), provisions
 * identities, and injects inbound messages as if a contact had written.
 */
export class SimulatorConnector implements MessengerConnector {
  private listener: ((message: InboundFromContact) => Promise<void>) | undefined;
  readonly groups: GroupAdministration;

  constructor(
    readonly messenger: Messenger,
    private readonly store: SimulatorStore,
  ) {
    this.groups = new SimulatorGroups(messenger, store);
  }

  async provision(appMessengerId: string): Promise<string> {
    return simulatedAddress(this.messenger, appMessengerId);
  }

  async deliver(delivery: OutboundDelivery): Promise<DeliveryResult> {
    const rejection = rejectionOf(this.messenger, delivery.contactId, delivery.text);
    return this.store.handOver(
      { messageId: delivery.messageId, messenger: this.messenger, from: delivery.from, contactId: delivery.contactId, text: delivery.text, groupId: delivery.groupId ?? null },
      (takeFailure) => {
        // What the messenger would refuse is refused before any injected failure is spent.
        if (rejection) return { ok: false, permanent: true, reason: rejection };
        const injected = takeFailure();
        return injected ? { ok: false, permanent: injected.permanent, reason: injected.reason } : { ok: true };
      },
      delivery.stillHeld,
    );
  }

  async listen(onInbound: (message: InboundFromContact) => Promise<void>): Promise<void> {
    this.listener = onInbound;
  }

  /** As if `contactId` wrote `text` to the bot identity `to`. Resolves when the gateway has it. */
  async inject(message: Omit<InboundFromContact, 'messenger'>): Promise<void> {
    if (!this.listener) throw new Error(`The ${this.messenger} simulator is not listening`);
    await this.listener({ ...message, messenger: this.messenger });
  }

  async close(): Promise<void> {
    this.listener = undefined;
  }
}
