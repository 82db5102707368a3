/**
 * The MessengerConnector port: one adapter per messenger daemon (signal-cli, simplex-chat, a
 * Session client) or the simulator. Connectors know nothing of apps or credentials: they send
 * to a contact from a bot identity, provision identities, and report what contacts wrote.
 */
import type { Messenger } from '../../domain/shared/messengers.ts';

export type { Messenger };

export interface OutboundDelivery {
  readonly messageId: string;
  /** The bot identity (app-messenger address) the message is sent from. */
  readonly from: string;
  readonly contactId: string;
  readonly text: string;
  readonly groupId?: string;
}

/** Why a delivery failed; `permanent` failures are not retried (e.g. a malformed contact id). */
export type DeliveryResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly permanent: boolean; readonly reason: string };

export interface InboundFromContact {
  readonly messenger: Messenger;
  /** The bot identity the contact wrote to. */
  readonly to: string;
  readonly contactId: string;
  readonly text: string;
  readonly groupId?: string;
  /** Epoch ms given by the messenger, if any. */
  readonly timestamp?: number;
  /** The messenger's own id for the message, used to drop duplicates. */
  readonly externalId?: string;
}

/** What a messenger's daemon says of itself when asked. */
export type DaemonHealth =
  | { readonly reachable: false; readonly reason: string }
  | {
      readonly reachable: true;
      /** The bot identities the daemon has (its accounts), when it can tell. */
      readonly identities?: ReadonlySet<string>;
    };

export interface MessengerConnector {
  readonly messenger: Messenger;
  /**
   * Creates (or finds) the bot identity of an app-messenger and returns its address. A connector
   * without it has identities an operator binds (a Signal account registered or linked on the
   * daemon: `relay signal bind`), and its app-messengers wait in `processing` until then.
   */
  provision?(appMessengerId: string): Promise<string>;
  deliver(delivery: OutboundDelivery): Promise<DeliveryResult>;
  /** For a connector on a daemon: asks the daemon now whether it answers and which identities it has. */
  checkHealth?(): Promise<DaemonHealth>;
  /** Starts reporting inbound messages; resolves when listening. */
  listen(onInbound: (message: InboundFromContact) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}
