/**
 * A key's "last used" (the dashboard's keys page), kept cheap: no event and no write per request.
 * The process that authenticates a request notes in memory when it last asked for the key's use to
 * be recorded, and asks at most once per key per hour: `RecordCredentialUse` on the credential's
 * stream, which the decider turns into `CredentialUsed` only when the stream holds no use within
 * the hour. So each instance asks at most once per key per hour (none when its read model already
 * shows another instance's use of the hour), and the history holds at most one use per key per
 * hour whatever the number of instances. The time shown is the first use of that hour: the last
 * use lies between it and an hour later.
 */
import { credentialDecider, credentialStreamName } from '../../domain/credential/decider.ts';
import { CREDENTIAL_USE_INTERVAL_MS } from '../../domain/credential/events.ts';
import type { CredentialView } from '../../projections/credentials/credentials-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import type { RelayContext } from '../services/context.ts';

/** After a failed record (the store did not answer), the next use asks again after this long. */
const RETRY_MS = 60_000;
/** Past this many keys noted, the notes older than the interval are dropped. */
const MAX_NOTED = 10_000;

export type RecordUse = (credentialId: string, usedAt: Date) => Promise<void>;

export class KeyUseNotes {
  /** When this process last asked (or saw) a use of each key recorded, in ms. */
  private readonly asked = new Map<string, number>();

  constructor(
    private readonly record: RecordUse,
    private readonly failed: (error: unknown, credentialId: string) => void,
  ) {}

  /** A request authenticated with `credential`'s key at `now` (ms): a Map lookup, and once an hour a record. */
  note(credential: CredentialView, now: number): void {
    const id = credential.credentialId;
    const asked = this.asked.get(id);
    if (asked !== undefined && now - asked < CREDENTIAL_USE_INTERVAL_MS) return;
    const seen = credential.lastUsedAt === undefined ? undefined : Date.parse(credential.lastUsedAt);
    if (this.asked.size >= MAX_NOTED) this.prune(now);
    if (seen !== undefined && now - seen < CREDENTIAL_USE_INTERVAL_MS) {
      // Another instance (or this one, before a restart) recorded a use of this hour.
      this.asked.set(id, seen);
      return;
    }
    this.asked.set(id, now);
    this.record(id, new Date(now)).catch((error: unknown) => {
      this.asked.set(id, now - CREDENTIAL_USE_INTERVAL_MS + RETRY_MS);
      this.failed(error, id);
    });
  }

  private prune(now: number) {
    for (const [id, at] of this.asked) if (now - at >= CREDENTIAL_USE_INTERVAL_MS) this.asked.delete(id);
  }

  /** How many keys are noted (for tests). */
  get size(): number {
    return this.asked.size;
  }
}

/** Records a use through the credential's decider (nothing when a use of the hour is there already, or the key is gone). */
export const recordUseIn =
  (ctx: Pick<RelayContext, 'store'>): RecordUse =>
  async (credentialId, usedAt) => {
    const result = await handleCommand(ctx.store, credentialStreamName(credentialId), credentialDecider, { type: 'RecordCredentialUse', data: { usedAt } }, { actor: `credential:${credentialId}` });
    if (!result.ok) throw new Error(result.error.message);
  };

const notesOf = new WeakMap<RelayContext, KeyUseNotes>();

/** Notes that a request of this process authenticated with the credential's key now. */
export const noteKeyUse = (ctx: RelayContext, credential: CredentialView, now = Date.now()): void => {
  let notes = notesOf.get(ctx);
  if (notes === undefined) {
    notes = new KeyUseNotes(recordUseIn(ctx), (error, credentialId) => ctx.log.warn({ err: error, credentialId }, 'key use not recorded'));
    notesOf.set(ctx, notes);
  }
  notes.note(credential, now);
};
