/** Why the bodies sealed by a data key were forgotten. */
export type ForgetReason = 'finished' | 'retention' | 'app deleted';

/** A destroyed data key: what it sealed (`sendbatch-<batchId>` or `inbound-<messageId>`), whose, and why it went. */
export interface ForgottenKey {
  keyId: string;
  appId: string;
  subject: string;
  reason: ForgetReason;
}

/**
 * On stream `shred-<shredId>`: data keys that sealed message bodies and contact ids were
 * destroyed, in the same transaction as this event: what they sealed can no longer be read by
 * anyone. One event per sweep of the body shredder, listing every key it destroyed.
 */
export type ShredEvent = { type: 'BodiesForgotten'; data: { shredId: string; keys: ForgottenKey[]; forgottenAt: string } };
