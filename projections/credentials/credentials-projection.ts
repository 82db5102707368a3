import type { CredentialEvent, CredentialRecord } from '../../domain/credential/events.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';

export type CredentialView = CredentialRecord;

/**
 * Live credentials by key hash (the hot path of every public request), by id and by owner, and
 * the header names that webhook-header credentials are read from.
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
        this.byHash.set(view.keyHash, view);
        this.byId.set(view.credentialId, view);
        if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, 1);
        return;
      }
      case 'CredentialDeleted': {
        const view = this.byId.get(event.data.credentialId);
        if (!view) return;
        this.byId.delete(view.credentialId);
        this.byHash.delete(view.keyHash);
        if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, -1);
        return;
      }
      default:
        return;
    }
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
      this.byHash.set(view.keyHash, view);
      this.byId.set(view.credentialId, view);
      if (view.webhookAuthHeaderName) this.countHeader(view.webhookAuthHeaderName, 1);
    }
  }

  byKeyHash(keyHash: string): CredentialView | undefined {
    return this.byHash.get(keyHash);
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
