/**
 * `/link CODE` and `/signin CODE` on the embedded event store (issue 47, item "a refused /link code
 * stays redeemable"): a code refused for its sender (a contact linked to another user, a contact
 * over its attempt limit) ends, so that the owner of the bot it was sent to, who saw it on poll,
 * cannot send it from a contact of theirs and link that contact to the victim's account.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyedHash } from '../../infra/crypto/keyed-hash.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { issueMessengerCode } from '../commands/issue-messenger-code.ts';
import { actOnCodeCommand, CODE_ATTEMPTS_PER_CONTACT, contactRefOf, newCodeAttemptLimiter, type CodeCommandDeps } from './code-commands.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';

const SECRET = '66'.repeat(32);
const VICTIM = 'usr_victim';
const ELSEWHERE = 'usr_elsewhere';
const LINKED_ELSEWHERE = '+15550470001';
const THROTTLED = '+15550470002';
const BOT_OWNER = '+15550470099';

describe('a refused code ends', () => {
  let dir: string;
  let store: EventStore;
  let deps: CodeCommandDeps;
  const keyedHash = createKeyedHash(SECRET);
  const metadata = { actor: `user:${VICTIM}`, correlationId: 'test' };
  const sent = (contactId: string, text: string) => actOnCodeCommand(deps, { messenger: 'signal', to: '+15550470000', contactId, text }, 'app_bot');

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-codes-'));
    store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    const elsewhere = contactRefOf(keyedHash, 'signal', LINKED_ELSEWHERE);
    deps = {
      store,
      sealer: createMessageSealer(createSecretBox(SECRET)),
      keyedHash,
      users: { userOfContact: (contactRef: string) => (contactRef === elsewhere ? ELSEWHERE : undefined) },
      attempts: newCodeAttemptLimiter({ limiter: (windowMs) => new RateLimiter(windowMs, windowMs) }),
    };
  });
  afterAll(async () => {
    deps.attempts.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when its sender is linked to another user: the bot owner sending it next links nothing', async () => {
    const code = await issueMessengerCode(store, keyedHash, { purpose: 'link', userId: VICTIM, pollSecretHash: null, ttlSeconds: 600 }, metadata);
    expect(await sent(LINKED_ELSEWHERE, `/link ${code.code}`)).toEqual({ kind: 'refused', reason: 'contact-linked-elsewhere' });
    expect(await sent(BOT_OWNER, `/link ${code.code}`)).toEqual({ kind: 'refused', reason: 'used' });
  });

  it('when its sender is over the attempt limit: the code is refused and ended, not left open', async () => {
    for (let i = 0; i < CODE_ATTEMPTS_PER_CONTACT; i++) expect((await sent(THROTTLED, '/link 0000-0000')).kind).toBe('unknown');
    const code = await issueMessengerCode(store, keyedHash, { purpose: 'link', userId: VICTIM, pollSecretHash: null, ttlSeconds: 600 }, metadata);
    expect(await sent(THROTTLED, `/link ${code.code}`)).toEqual({ kind: 'refused', reason: 'throttled' });
    expect(await sent(BOT_OWNER, `/link ${code.code}`)).toEqual({ kind: 'refused', reason: 'used' });
    // A guess over the limit still writes nothing (there is no code to refuse).
    expect(await sent(THROTTLED, '/link 1111-1111')).toEqual({ kind: 'throttled' });
  });
});
