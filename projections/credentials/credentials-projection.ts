import type { CredentialEvent, CredentialRecord } from '../../domain/credential/events.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';

/**
 * A live credential: its current key, the key a roll replaced while it may still work
 * (`previousKeyHash` until `previousKeyUntil`), and its last recorded use (to within the hour).
 */
export type CredentialView = CredentialRecord & { previousKeyHash?: string; previousKeyUntil?: string; lastUsedAt?: string };

/**
 * Live credentials by key hash (the hot path of every public request), by id and by owner, and
 * the header names that webhook-header credentials are read from. A rolled credential is found by
 * both its keys; the fold keeps the older one (never more than two a credential) and the lookup
 * refuses it after its end, so that the model stays a function of the history alone.
 */
export class CredentialsProjection implements Projection {
  readonly name = 'credentials';
  readonly categories = ['credential'] as const;
  private readonly byHash = new Map<string, CredentialView>();
  private readonly byId = new Map<string, CredentialView>();
  private readonly headerNameCounts = new Map<string, number>();

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as CredentialEvent;
    switch (event.type) {
      case 'CredentialCreated': {
        const view = event.data;
        this.put(view);
        if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, 1);
        return;
      }
      case 'CredentialDeleted': {
        const view = this.byId.get(event.data.credentialId);
        if (!view) return;
        this.byId.delete(view.credentialId);
        this.byHash.delete(view.keyHash);
        if (view.previousKeyHash) this.byHash.delete(view.previousKeyHash);
        if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, -1);
        return;
      }
      case 'CredentialRolled': {
        const view = this.byId.get(event.data.credentialId);
        if (!view) return;
        // A key older than the one replaced now stops at once: two keys a credential at most.
        if (view.previousKeyHash) this.byHash.delete(view.previousKeyHash);
        const { keyHash, secretEncrypted, keyPreview, previousKeyUntil } = event.data;
        this.put({ ...view, keyHash, secretEncrypted, keyPreview, previousKeyHash: view.keyHash, previousKeyUntil });
        return;
      }
      case 'CredentialUsed': {
        const view = this.byId.get(event.data.credentialId);
        if (view) this.put({ ...view, lastUsedAt: event.data.usedAt });
        return;
      }
      default:
        return;
    }
  }

  private put(view: CredentialView) {
    this.byId.set(view.credentialId, view);
    this.byHash.set(view.keyHash, view);
    if (view.previousKeyHash) this.byHash.set(view.previousKeyHash, view);
  }

  private countHeader(name: string, delta: number) {
    const next = (this.headerNameCounts.get(name) ?? 0) + delta;
    if (next <= 0) this.headerNameCounts.delete(name);
    else this.headerNameCounts.set(name, next);
  }

  snapshot(): unknown {
    return [...this.byId.values()];
  }

  restore(snapshot: unknown): void {
    this.byHash.clear();
    this.byId.clear();
    this.headerNameCounts.clear();
    for (const view of snapshot as CredentialView[]) {
      this.put(view);
      if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, 1);
    }
  }

  /**
   * The live credential a key hash finds at `now` (ms): by its current key, or by the key a roll
   * replaced until that key's end (`previousKeyUntil`), after which the old key finds nothing.
   */
  byKeyHash(keyHash: string, now = Date.now()): CredentialView | undefined {
    const view = this.byHash.get(keyHash);
    if (view === undefined || view.keyHash === keyHash) return view;
    return view.previousKeyUntil !== undefined && Date.parse(view.previousKeyUntil) > now ? view : undefined;
  }

  credential(credentialId: string): CredentialView | undefined {
    return this.byId.get(credentialId);
  }

  credentialsOf(userId: string): CredentialView[] {
    return [...this.byId.values()].filter((c) => c.userId === userId);
  }

  /** Whether any live webhook-header credential reads its key from a header of its own. */
  get hasCustomHeaderNames(): boolean {
    return this.headerNameCounts.size > 0;
  }

  /** Whether a live webhook-header credential reads its key from this (lower-cased) header. */
  isCustomHeaderName(name: string): boolean {
    return this.headerNameCounts.has(name);
  }
}
