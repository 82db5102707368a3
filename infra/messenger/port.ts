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
  /** The name contacts see the bot under, where the messenger sends one with each message (Session's profile): the app's name. */
  readonly senderName?: string;
  /**
   * Whether the caller may still make this attempt (its delivery worker still holds the record,
   * infra/broker/port.ts HeldRecords): a synchronous look without I/O. A connector that does not
   * hand the message over at once (one that gathers the hand-offs of a turn) asks it again right
   * before the message leaves, and makes no attempt when it says false: it rejects with
   * DeliveryWithdrawnError (a process frozen in between must not hand over what another has).
   */
  readonly stillHeld?: () => boolean;
  /**
   * The timestamp this message (or part) carries, kept in its history before its first hand-off
   * (MessengerConnector.stamp): given, the connector sends with it and no other.
   */
  readonly timestamp?: number;
}

/** The delivery's `stillHeld` said no right before the hand-off: no attempt was made. */
export class DeliveryWithdrawnError extends Error {
  override readonly name = 'DeliveryWithdrawnError';
}

/**
 * Called by a connector right before the message leaves (after every await of its own: a queue, a
 * lookup, a path): throws DeliveryWithdrawnError when the delivery's record may be another
 * member's now, so that a process frozen in between hands nothing over.
 */
export const handOffOrWithdraw = (delivery: OutboundDelivery): void => {
  if (delivery.stillHeld !== undefined && !delivery.stillHeld()) throw new DeliveryWithdrawnError("This delivery's record may be another member's now: nothing was handed over");
};

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
  /** The id an earlier Relay gave the same message (Session's storage hash, before its replay key): one recorded under it is a duplicate. */
  readonly formerExternalId?: string;
}

/** Something changed in a group of a bot identity (a member joined, left, or was changed by someone). */
export interface GroupActivity {
  readonly messenger: Messenger;
  /** The bot identity whose group it is. */
  readonly to: string;
  readonly groupId: string;
}

/** What a messenger's daemon says of itself when asked. */
export type DaemonHealth =
  | { readonly reachable: false; readonly reason: string }
  | {
      readonly reachable: true;
      /** The bot identities the daemon has (its accounts), when it can tell. */
      readonly identities?: ReadonlySet<string>;
    };

/** A member's standing in a group the bot administers. The bot itself is not listed. */
export type GroupRole = 'admin' | 'member';

export interface GroupMember {
  /** In the messenger's contact id format, as inbound messages give it (a reply may reuse it). */
  readonly contactId: string;
  readonly role: GroupRole;
  /** `invited`: asked to join (SimpleX invitations, Signal's pending members), not in yet. */
  readonly status: 'joined' | 'invited';
}

/**
 * The groups a bot identity administers, on connectors whose messenger has them. Every method
 * throws `GroupOperationError` when the messenger refuses (its reason never holds a contact id)
 * and `UnavailableError` when the daemon cannot be reached (the caller retries later).
 */
export interface GroupAdministration {
  /** Creates a group owned by the bot identity `from`, named `name`; returns its id. */
  createGroup(from: string, name: string): Promise<string>;
  /** Adds (or, where the messenger only invites, invites) a contact; a member already in is no error. */
  addMember(from: string, groupId: string, contactId: string): Promise<void>;
  removeMember(from: string, groupId: string, contactId: string): Promise<void>;
  setRole(from: string, groupId: string, contactId: string, role: GroupRole): Promise<void>;
  /** The group's invite link, turned on if it was not. */
  inviteLink(from: string, groupId: string): Promise<string>;
  members(from: string, groupId: string): Promise<GroupMember[]>;
}

/**
 * The daemon answers, but the bot's identity is not on it (a Signal account unlinked or removed, a
 * SimpleX user gone): no attempt could be made. Unlike a daemon that is away, this holds back only
 * this identity's messages: the delivery is deferred, and abandoned after a bounded wait.
 */
export class BotIdentityMissingError extends Error {
  override readonly name = 'BotIdentityMissingError';
}

/** The messenger refused a group operation. `permanent: false`: it may work if tried again. */
export class GroupOperationError extends Error {
  override readonly name = 'GroupOperationError';
  constructor(
    message: string,
    readonly permanent = true,
  ) {
    super(message);
  }
}

export interface MessengerConnector {
  readonly messenger: Messenger;
  /** The groups its bot identities administer, when the connector can. */
  readonly groups?: GroupAdministration;
  /**
   * Creates (or finds) the bot identity of an app-messenger and returns its address. A connector
   * without it has identities an operator binds (a Signal account registered or linked on the
   * daemon: `relay signal bind`), and its app-messengers wait in `processing` until then.
   */
  provision?(appMessengerId: string): Promise<string>;
  deliver(delivery: OutboundDelivery): Promise<DeliveryResult>;
  /**
   * Of a messenger whose clients drop a second message with the sender and timestamp of one they
   * have (Session): the timestamp the delivery's message would carry now. The delivery worker keeps
   * it in the message's history before the first hand-off and gives it back as
   * `OutboundDelivery.timestamp` to every hand-off of that message, so that a retry, or another
   * instance's hand-off after this one's went unrecorded, is seen once. Rejects as `deliver` does
   * when the bot's identity or the network is not there.
   */
  stamp?(delivery: OutboundDelivery): Promise<number>;
  /** For a connector on a daemon: asks the daemon now whether it answers and which identities it has. */
  checkHealth?(): Promise<DaemonHealth>;
  /**
   * Starts reporting inbound messages, and changes in the bots' groups where the daemon tells of
   * them (so that the group's member list is read again at once); resolves when listening.
   */
  listen(onInbound: (message: InboundFromContact) => Promise<void>, onGroupActivity?: (activity: GroupActivity) => void): Promise<void>;
  close(): Promise<void>;
}
