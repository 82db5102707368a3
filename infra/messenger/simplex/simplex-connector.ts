/**
 * The SimpleX connector, on simplex-chat's WebSocket API: each app-messenger is a SimpleX user of
 * its own (`relay-<appMessengerId>`, a bot profile) whose contact address, with auto-accept on,
 * is the app-messenger's `address`; contacts who connect through it are accepted by simplex-chat
 * itself, their text messages (`newChatItems`) are handed to the gateway, and replies go out with
 * `/_send @<contactId>` or `/_send #<groupId>` as that user.
 *
 * simplex-chat runs a command that names a user (`/_show_address`, `/_address`, `/_group`, …) only
 * for its active user (`differentActiveUser` otherwise), and `/_send` as the active user: so every
 * user's command is preceded by `/_user <userId>` and run with it as one step, one at a time
 * (commands on one connection run in order; `alone`). A `differentActiveUser` that still comes
 * (another client switched users between the two) is a refusal for now.
 */
import { rejectionOf } from '../messenger-rules.ts';
import { InboundHandoff, type HandoffLog } from '../inbound-handoff.ts';
import { BotIdentityMissingError, handOffOrWithdraw, type DaemonHealth, type DeliveryResult, type GroupActivity, type InboundFromContact, type MessengerConnector, type OutboundDelivery } from '../port.ts';
import { MEMBER_PREFIX, readNewChatItems } from './chat-items.ts';
import { outcomeOfSendError } from './send-outcome.ts';
import { SimplexGroups } from './simplex-groups.ts';
import { SimplexClient, SimplexCommandError, SimplexUnavailableError, type ChannelState, type SimplexResponse } from './simplex-client.ts';

export interface SimplexConnectorOptions {
  /** `ws://HOST:PORT` of `simplex-chat -p PORT`. */
  readonly url: string;
  readonly timeoutMs: number;
  readonly log: HandoffLog & { info(object: object, message: string): void };
  readonly reconnect?: { readonly minMs: number; readonly maxMs: number };
  readonly retry?: { readonly minMs: number; readonly maxMs: number };
  readonly onChannelState?: (state: ChannelState) => void;
}

type User = { userId: number; profile?: { displayName?: string } };
type Link = { connFullLink?: string; connShortLink?: string };

const linkOf = (link: Link | undefined): string | undefined => link?.connShortLink ?? link?.connFullLink;
const DIGITS = /^\d{1,19}$/;
/** Events that change who is in a group, or their role (bots/api/EVENTS.md). */
const GROUP_EVENTS = new Set(['joinedGroupMember', 'connectedToGroupMember', 'leftMember', 'deletedMember', 'memberRole', 'memberAcceptedByOther']);

export const userNameOf = (appMessengerId: string) => `relay-${appMessengerId}`;

/** The oldest simplex-chat Relay works with: bot profiles and `/_address_settings` came in 6.4.3. */
export const MIN_SIMPLEX_VERSION = [6, 4, 3] as const;

/** Whether a version string (`6.3.7.1`, `v6.4.3`) is older than `min`. */
export const olderThan = (version: string, min: readonly number[]): boolean => {
  const parts = version.replace(/^v/, '').split(/[.-]/).map((part) => Number.parseInt(part, 10));
  for (let i = 0; i < min.length; i++) {
    const part = Number.isFinite(parts[i]) ? parts[i]! : 0;
    if (part !== min[i]) return part < min[i]!;
  }
  return false;
};

export class SimplexConnector implements MessengerConnector {
  readonly messenger = 'simplex' as const;
  private readonly client: SimplexClient;
  private readonly handoff: InboundHandoff;
  private readonly addressOfUser = new Map<number, string>();
  private readonly userOfAddress = new Map<string, number>();
  /** Commands that must not interleave with another user's (switch, then act). */
  private exclusive: Promise<unknown> = Promise.resolve();
  /** Events are read in order (a lookup of an unknown user's address must not reorder them). */
  private events: Promise<void> = Promise.resolve();
  private onGroupActivity: ((activity: GroupActivity) => void) | undefined;
  private version: { connection: number; value: string | undefined } | undefined;
  readonly groups: SimplexGroups = new SimplexGroups((from, work) =>
    this.alone(async () => {
      const userId = await this.userIdOf(from);
      await this.select(userId);
      return work((cmd) => this.client.command(cmd), userId);
    }),
  );

  constructor(private readonly options: SimplexConnectorOptions) {
    this.handoff = new InboundHandoff(options.log, options.retry);
    this.client = new SimplexClient({
      url: options.url,
      timeoutMs: options.timeoutMs,
      ...(options.reconnect ? { reconnect: options.reconnect } : {}),
      onEvent: (event) => {
        this.events = this.events.then(() => this.onEvent(event)).catch((error: unknown) => this.options.log.warn({ err: error }, 'a simplex-chat event could not be read'));
      },
      onState: (state) => {
        if (!state.open) this.options.log.warn({ reason: state.reason }, 'simplex-chat connection lost; reconnecting');
        this.options.onChannelState?.(state);
      },
      onMalformed: (reason) => this.options.log.warn({}, reason),
    });
  }

  /** Finds or creates the app-messenger's SimpleX user, its address with auto-accept, and returns the address. */
  async provision(appMessengerId: string): Promise<string> {
    return this.alone(async () => {
      const name = userNameOf(appMessengerId);
      const users = await this.users();
      const existing = users.find((u) => u.profile?.displayName === name);
      const userId = existing?.userId ?? (await this.createUser(name));
      const address = await this.addressOf(userId, true); // selects the user
      await this.client.command(`/_address_settings ${userId} ${JSON.stringify({ autoAccept: { acceptIncognito: false }, businessAddress: false })}`);
      return address;
    });
  }

  async deliver(delivery: OutboundDelivery): Promise<DeliveryResult> {
    const rejection = rejectionOf('simplex', delivery.contactId, delivery.text);
    if (rejection) return { ok: false, permanent: true, reason: rejection };
    if (delivery.groupId !== undefined && !DIGITS.test(delivery.groupId)) return { ok: false, permanent: true, reason: 'Invalid groupId for simplex: expected a numeric group id' };
    if (delivery.groupId === undefined && delivery.contactId.startsWith(MEMBER_PREFIX))
      return { ok: false, permanent: true, reason: 'A group member without a direct contact of the bot cannot be written to directly: reply in the group, with its groupId' };
    const target = delivery.groupId !== undefined ? `#${delivery.groupId}` : `@${delivery.contactId}`;
    const messages = JSON.stringify([{ msgContent: { type: 'text', text: delivery.text }, mentions: {} }]);
    try {
      const answer = await this.alone(async () => {
        const userId = await this.userIdOf(delivery.from);
        await this.select(userId);
        // After waiting its turn (`alone`): a process frozen meanwhile hands nothing over.
        handOffOrWithdraw(delivery);
        return this.client.command(`/_send ${target} json ${messages}`);
      });
      if (answer.type === 'newChatItems') return { ok: true };
      return { ok: false, permanent: false, reason: `simplex-chat answered a send with ${answer.type}` };
    } catch (error) {
      if (error instanceof SimplexCommandError) return outcomeOfSendError(error);
      throw error;
    }
  }

  /**
   * `/users`: simplex-chat answers, and these are the addresses of its users that have one (each
   * learnt once). A core older than MIN_SIMPLEX_VERSION (asked once per connection, `/version`) is
   * reported as not usable, saying so: it has neither bot profiles nor `/_address_settings`.
   */
  async checkHealth(): Promise<DaemonHealth> {
    try {
      const version = await this.coreVersion();
      if (version !== undefined && olderThan(version, MIN_SIMPLEX_VERSION))
        return { reachable: false, reason: `simplex-chat ${version} is older than ${MIN_SIMPLEX_VERSION.join('.')}, the oldest Relay works with (bot profiles, /_address_settings)` };
      const users = await this.users();
      const addresses = new Set<string>();
      for (const user of users) {
        // A user's address is asked for once; the round only asks which users there are.
        const address = this.addressOfUser.get(user.userId) ?? (await this.knownAddressOf(user.userId));
        if (address) addresses.add(address);
      }
      return { reachable: true, identities: addresses };
    } catch (error) {
      if (error instanceof SimplexUnavailableError) return { reachable: false, reason: 'simplex-chat cannot be reached' };
      return { reachable: true };
    }
  }

  async listen(onInbound: (message: InboundFromContact) => Promise<void>, onGroupActivity?: (activity: GroupActivity) => void): Promise<void> {
    this.onGroupActivity = onGroupActivity;
    this.handoff.start(onInbound);
    await this.client.start();
  }

  async close(): Promise<void> {
    this.handoff.close();
    await this.client.close();
  }

  private async onEvent(event: SimplexResponse): Promise<void> {
    if (event.type === 'contactConnected') return this.options.log.info({}, 'a contact connected through a SimpleX address');
    if (GROUP_EVENTS.has(event.type)) return this.reportGroupActivity(event);
    if (event.type !== 'newChatItems') return; // other events are not for Relay
    const { received, malformed } = readNewChatItems(event);
    if (malformed > 0) this.options.log.warn({ malformed }, 'skipped chat items of unexpected shape');
    for (const item of received) {
      const to = this.addressOfUser.get(item.userId) ?? (await this.knownAddressOf(item.userId));
      if (!to) {
        this.options.log.warn({ userId: item.userId }, 'a SimpleX message to a user without an address was not routed');
        continue;
      }
      this.handoff.push({
        messenger: 'simplex',
        to,
        contactId: item.contactId,
        text: item.text,
        ...(item.groupId !== undefined ? { groupId: item.groupId } : {}),
        ...(item.timestamp !== undefined ? { timestamp: item.timestamp } : {}),
        externalId: `${item.userId}:${item.itemId}`,
      });
    }
  }

  /** A member joined, left, was removed or changed role in a group of one of the users. */
  private async reportGroupActivity(event: SimplexResponse): Promise<void> {
    const userId = (event.user as User | undefined)?.userId;
    const groupId = (event.groupInfo as { groupId?: unknown } | undefined)?.groupId;
    if (!this.onGroupActivity || typeof userId !== 'number' || typeof groupId !== 'number') return;
    const to = this.addressOfUser.get(userId) ?? (await this.knownAddressOf(userId));
    if (to) this.onGroupActivity({ messenger: 'simplex', to, groupId: String(groupId) });
  }

  private alone<T>(work: () => Promise<T>): Promise<T> {
    const run = this.exclusive.then(work, work);
    this.exclusive = run.catch(() => undefined);
    return run;
  }

  /** The core's version (`/version`), asked once per connection; undefined when it does not say. */
  private async coreVersion(): Promise<string | undefined> {
    if (this.version?.connection === this.client.connections) return this.version.value;
    const answer = await this.client.command('/version').catch((error: unknown) => {
      if (error instanceof SimplexCommandError) return undefined;
      throw error;
    });
    const value = (answer?.versionInfo as { version?: unknown } | undefined)?.version;
    this.version = { connection: this.client.connections, value: typeof value === 'string' ? value : undefined };
    return this.version.value;
  }

  private async users(): Promise<User[]> {
    const answer = await this.client.command('/users');
    const list = Array.isArray(answer.users) ? (answer.users as Array<{ user?: User }>) : [];
    return list.map((u) => u.user).filter((u): u is User => typeof u?.userId === 'number');
  }

  private async createUser(name: string): Promise<number> {
    const answer = await this.client.command(`/_create user ${JSON.stringify({ profile: { displayName: name, fullName: '', peerType: 'bot' }, pastTimestamp: false, userChatRelay: false, clientService: false })}`);
    const userId = (answer.user as User | undefined)?.userId;
    if (typeof userId !== 'number') throw new Error(`simplex-chat answered /_create user with ${answer.type}`);
    return userId;
  }

  /** Makes the user simplex-chat's active user (inside `alone`). */
  private async select(userId: number): Promise<void> {
    await this.client.command(`/_user ${userId}`);
  }

  /** The user's address, if it has one, asked for as that user outside a step of `alone`. */
  private knownAddressOf(userId: number): Promise<string | undefined> {
    return this.alone(() => this.addressOf(userId, false)).catch(() => undefined);
  }

  /** The user's contact address (created when `create` and there is none); selects the user (inside `alone`). */
  private async addressOf(userId: number, create: boolean): Promise<string> {
    let link: string | undefined;
    await this.select(userId);
    try {
      const shown = await this.client.command(`/_show_address ${userId}`);
      link = linkOf((shown.contactLink as { connLinkContact?: Link } | undefined)?.connLinkContact);
    } catch (error) {
      if (!(error instanceof SimplexCommandError) || error.kind !== 'errorStore/userContactLinkNotFound' || !create) throw error;
      const created = await this.client.command(`/_address ${userId}`);
      link = linkOf(created.connLinkContact as Link | undefined);
    }
    if (!link) throw new Error('simplex-chat answered without a contact link');
    this.addressOfUser.set(userId, link);
    this.userOfAddress.set(link, userId);
    return link;
  }

  /** The SimpleX user whose address is `address`; looked up again once when not known. */
  private async userIdOf(address: string): Promise<number> {
    const known = this.userOfAddress.get(address);
    if (known !== undefined) return known;
    for (const user of await this.users()) await this.addressOf(user.userId, false).catch(() => undefined);
    const found = this.userOfAddress.get(address);
    if (found === undefined) throw new BotIdentityMissingError("simplex-chat has no user with the bot's address (removed?)");
    return found;
  }
}
