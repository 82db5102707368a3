import { CODE_LENGTH, displayCode } from '../../domain/messenger-code/code.ts';
import { messengerCodeDecider, messengerCodeStreamName } from '../../domain/messenger-code/decider.ts';
import type { CodePurpose } from '../../domain/messenger-code/events.ts';
import type { KeyedHash } from '../../infra/crypto/keyed-hash.ts';
import { randomCrockford } from '../../infra/crypto/random-code.ts';
import type { EventMetadata, EventStore } from '../../infra/event-store/port.ts';
import { handleCommand } from './handle-command.ts';

export interface IssuedCode {
  /** As shown: `ABCD-EFGH`. Only its keyed ref is kept. */
  readonly code: string;
  readonly codeRef: string;
  readonly expiresAt: Date;
}

/**
 * A new messenger code for a sign-in or a link: drawn at random, recorded by its keyed ref on a
 * stream of its own (`messengercode-<codeRef>`). A code whose ref was issued before (a code
 * drawn twice, one chance in 2^40 a draw) is drawn again.
 */
export const issueMessengerCode = async (
  store: EventStore,
  keyedHash: KeyedHash,
  request: { purpose: CodePurpose; userId: string | null; pollSecretHash: string | null; ttlSeconds: number },
  metadata: EventMetadata,
): Promise<IssuedCode> => {
  for (let draw = 1; ; draw++) {
    const canonical = randomCrockford(CODE_LENGTH);
    const codeRef = keyedHash.ref('messenger-code', canonical);
    const now = new Date();
    const expiresAt = new Date(now.getTime() + request.ttlSeconds * 1000);
    const result = await handleCommand(
      store,
      messengerCodeStreamName(codeRef),
      messengerCodeDecider,
      { type: 'IssueMessengerCode', data: { codeRef, purpose: request.purpose, userId: request.userId, pollSecretHash: request.pollSecretHash, expiresAt, now } },
      metadata,
      { newStream: true },
    );
    if (result.ok) return { code: displayCode(canonical), codeRef, expiresAt };
    if (draw >= 3) throw new Error(result.error.message);
  }
};
