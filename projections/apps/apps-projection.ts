import type { AppEvent, AppMessengerHealth, AppMessengerStatus, AppSettings } from '../../domain/app/events.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';

export interface AppMessengerView {
  id: string;
  appId: string;
  messenger: Messenger;
  status: AppMessengerStatus;
  address: string | null;
  health: AppMessengerHealth;
  /** Why the health is not `ok` (never a contact id). */
  healthReason: string | null;
}

export interface AppView {
  id: string;
  userId: string;
  settings: AppSettings;
  createdAt: string;
  messengers: AppMessengerView[];
  /** When its owner last asked the webhook to be tried again now (the dispatcher then skips a backoff that began before). */
  webhookRetryRequestedAt?: string;
}


/** Live apps, their app-messengers, and the routing of a bot identity back to its app-messenger. */
export class AppsProjection implements Projection {
  readonly name = 'apps';
  readonly categories = ['app'] as const;
  private readonly byId = new Map<string, AppView>();
  private readonly appMessengers = new Map<string, AppMessengerView>();
  /**
   * Per messenger, the app-messengers by their bot's address (the address strings the views hold:
   * a joined key per app-messenger was about 5 MB of strings at 75,000 of them, per thread).
   */
  private readonly byAddress = new Map<string, Map<string, AppMessengerView>>();
  /** Each user's apps (ids, oldest first): the account API's lists without a walk of every app. */
  private readonly byUser = new Map<string, Set<string>>();
  /** The apps whose delivery type is `webhook`: the webhook dispatcher's round without a walk of every app. */
  private readonly webhookIds = new Set<string>();
  /** Counts the events applied (and restores): what is worked out from the apps holds while it stays the same. */
  revision = 0;

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as AppEvent;
    this.revision++;
    switch (event.type) {
      case 'AppCreated': {
        const { appId, userId, createdAt, ...settings } = event.data;
        this.index({ id: appId, userId, settings, createdAt, messengers: [] });
        return;
      }
      case 'AppUpdated': {
        const app = this.byId.get(event.data.appId);
        if (!app) return;
        app.settings = { ...app.settings, ...event.data.changes };
        this.indexDeliveryType(app);
        return;
      }
      case 'AppWebhookRetryRequested': {
        const app = this.byId.get(event.data.appId);
        if (app) app.webhookRetryRequestedAt = event.data.requestedAt;
        return;
      }
      case 'AppDeleted': {
        const app = this.byId.get(event.data.appId);
        if (!app) return;
        for (const m of app.messengers) {
          this.appMessengers.delete(m.id);
          if (m.address !== null) this.byAddress.get(m.messenger)?.delete(m.address);
        }
        this.byId.delete(event.data.appId);
        const own = this.byUser.get(app.userId);
        own?.delete(app.id);
        if (own?.size === 0) this.byUser.delete(app.userId);
        this.webhookIds.delete(app.id);
        return;
      }
      case 'AppMessengerAdded': {
        const app = this.byId.get(event.data.appId);
        if (!app) return;
        const view: AppMessengerView = {
          id: event.data.appMessengerId,
          appId: app.id,
          messenger: event.data.messenger,
          status: 'processing',
          address: null,
          health: 'ok',
          healthReason: null,
        };
        app.messengers.push(view);
        this.appMessengers.set(view.id, view);
        return;
      }
      case 'AppMessengerProvisioned': {
        const view = this.appMessengers.get(event.data.appMessengerId);
        if (!view) return;
        view.address = event.data.address;
        this.addressed(view);
        return;
      }
      case 'AppMessengerStatusChanged': {
        const view = this.appMessengers.get(event.data.appMessengerId);
        if (view && view.address !== null) view.status = event.data.status;
        return;
      }
      case 'AppMessengerHealthChanged': {
        const view = this.appMessengers.get(event.data.appMessengerId);
        if (view) Object.assign(view, { health: event.data.health, healthReason: event.data.reason });
        return;
      }
      default:
        return;
    }
  }

  snapshot(): unknown {
    return [...this.byId.values()];
  }

  restore(snapshot: unknown): void {
    this.revision++;
    this.byId.clear();
    this.appMessengers.clear();
    this.byAddress.clear();
    this.byUser.clear();
    this.webhookIds.clear();
    for (const app of snapshot as AppView[]) {
      this.index(app);
      for (const m of app.messengers) {
        // Snapshots taken before health existed: every app-messenger was taken as reachable.
        m.health ??= 'ok';
        m.healthReason ??= null;
        this.appMessengers.set(m.id, m);
        // The app's own id string, not a copy per view from the snapshot's text.
        m.appId = app.id;
        if (m.address !== null) this.addressed(m);
      }
    }
  }

  app(appId: string): AppView | undefined {
    return this.byId.get(appId);
  }

  /** Every live app. */
  allApps(): AppView[] {
    return [...this.byId.values()];
  }

  appsOf(userId: string): AppView[] {
    const apps: AppView[] = [];
    for (const id of this.byUser.get(userId) ?? []) apps.push(this.byId.get(id)!);
    return apps;
  }

  /** The live apps whose delivery type is `webhook` (active or not, with a URL or not). */
  webhookApps(): AppView[] {
    const apps: AppView[] = [];
    for (const id of this.webhookIds) apps.push(this.byId.get(id)!);
    return apps;
  }

  private addressed(view: AppMessengerView): void {
    let byAddress = this.byAddress.get(view.messenger);
    if (!byAddress) this.byAddress.set(view.messenger, (byAddress = new Map()));
    byAddress.set(view.address!, view);
  }

  private index(app: AppView): void {
    this.byId.set(app.id, app);
    let own = this.byUser.get(app.userId);
    if (!own) this.byUser.set(app.userId, (own = new Set()));
    own.add(app.id);
    this.indexDeliveryType(app);
  }

  private indexDeliveryType(app: AppView): void {
    if (app.settings.deliveryType === 'webhook') this.webhookIds.add(app.id);
    else this.webhookIds.delete(app.id);
  }

  appMessenger(appMessengerId: string): AppMessengerView | undefined {
    return this.appMessengers.get(appMessengerId);
  }

  /** The app-messenger of an app on one messenger, if the app uses that messenger. */
  /** Every app-messenger of the live apps. */
  allAppMessengers(): IterableIterator<AppMessengerView> {
    return this.appMessengers.values();
  }

  appMessengerOf(appId: string, messenger: Messenger): AppMessengerView | undefined {
    return this.byId.get(appId)?.messengers.find((m) => m.messenger === messenger);
  }

  /** The app-messenger whose bot identity is `address` on `messenger`. */
  byBotAddress(messenger: Messenger, address: string): AppMessengerView | undefined {
    return this.byAddress.get(messenger)?.get(address);
  }

  /** App-messengers still waiting for their identity. */
  pendingProvisioning(): AppMessengerView[] {
    return [...this.appMessengers.values()].filter((m) => m.address === null);
  }

  isLive(appId: string): boolean {
    return this.byId.has(appId);
  }
}
