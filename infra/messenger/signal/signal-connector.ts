/**
 * The Signal connector: sends through signal-cli's `send` from the app-messenger's bound account,
 * and hands on the contacts' messages the daemon receives for any of its accounts.
 *
 * signal-cli acknowledges a message to Signal's servers as soon as it receives it, so a message it
 * handed over must not be dropped here: the inbound handoff passes each to the gateway (which
 * records it as an event before anything else) in order, retried while the gateway cannot record
 * it. The one window that remains: a message the daemon handed over while Relay's process stops
 * before the gateway recorded it (milliseconds; docs/messengers.md).
 */
import { InboundHandoff } from '../inbound-handoff.ts';
import { rejectionOf } from '../messenger-rules.ts';
import { handOffOrWithdraw, type DaemonHealth, type DeliveryResult, type GroupActivity, type InboundFromContact, type MessengerConnector, type OutboundDelivery } from '../port.ts';
import { identitiesOfAccounts } from './accounts.ts';
import { readEnvelope } from './envelopes.ts';
import { recipientOf } from './recipients.ts';
import { SignalGroups } from './signal-groups.ts';
import { outcomeOfDaemonError, outcomeOfSend } from './send-outcome.ts';
import { SignalDaemonError, SignalDaemonUnavailableError, type ChannelState, type SignalRpc } from './signal-rpc.ts';


export { recipientOf };

/** How long a health check waits for the daemon. */
const HEALTH_TIMEOUT_MS = 5_000;

export interface SignalConnectorOptions {
  readonly rpc: SignalRpc;
  readonly log: { warn(object: object, message: string): void; error(object: object, message: string): void };
  /** Back-off between attempts to hand an inbound message to the gateway. */
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  readonly onChannelState?: (state: ChannelState) => void;
}

export class SignalConnector implements MessengerConnector {
  readonly messenger = 'signal' as const;
  private readonly handoff: InboundHandoff;
  readonly groups: SignalGroups;

  constructor(private readonly options: SignalConnectorOptions) {
    this.handoff = new InboundHandoff(options.log, options.retry);
    this.groups = new SignalGroups(options.rpc);
  }

  async deliver(delivery: OutboundDelivery): Promise<DeliveryResult> {
    const rejection = rejectionOf('signal', delivery.contactId, delivery.text);
    if (rejection) return { ok: false, permanent: true, reason: rejection };
    const target = delivery.groupId ? { groupId: delivery.groupId } : { recipient: [recipientOf(delivery.contactId)] };
    try {
      handOffOrWithdraw(delivery);
      const result = await this.options.rpc.call('send', { account: delivery.from, ...target, message: delivery.text });
      return outcomeOfSend(result, delivery.groupId !== undefined);
    } catch (error) {
      if (error instanceof SignalDaemonError) return outcomeOfDaemonError(error, [delivery.contactId, recipientOf(delivery.contactId), delivery.groupId ?? '']);
      throw error;
    }
  }

  /** `listAccounts`: the daemon answers, and has these accounts (their numbers and ACIs). */
  async checkHealth(): Promise<DaemonHealth> {
    let accounts: unknown;
    try {
      accounts = await this.options.rpc.call('listAccounts', undefined, { timeoutMs: HEALTH_TIMEOUT_MS });
    } catch (error) {
      if (error instanceof SignalDaemonUnavailableError) return { reachable: false, reason: 'The signal-cli daemon cannot be reached' };
      return { reachable: true };
    }
    if (!Array.isArray(accounts)) return { reachable: true };
    return { reachable: true, identities: new Set(identitiesOfAccounts(accounts)) };
  }

  async listen(onInbound: (message: InboundFromContact) => Promise<void>, onGroupActivity?: (activity: GroupActivity) => void): Promise<void> {
    this.handoff.start(onInbound);
    this.options.rpc.listen(
      (params) => {
        const reading = readEnvelope(params);
        if (reading.kind === 'malformed') return this.options.log.warn({ component: 'signal' }, `skipped ${reading.reason}`);
        if (reading.kind === 'skipped') return;
        if (reading.kind === 'group-update') return onGroupActivity?.(reading.activity);
        this.handoff.push(reading.message);
      },
      (state) => {
        if (!state.open) this.options.log.warn({ component: 'signal', reason: state.reason }, 'signal-cli event channel lost; reconnecting');
        this.options.onChannelState?.(state);
      },
    );
  }

  async close(): Promise<void> {
    this.handoff.close();
    await this.options.rpc.close();
  }
}
