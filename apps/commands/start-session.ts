import { createHash, randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { parse as parseSmtpAddress } from 'smtp-address-parser';
import { TEXT_LIMITS, textProblem } from '../../domain/shared/text.ts';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import { hashKey } from '../../infra/crypto/keys.ts';
import { newId } from '../../infra/ids/new-id.ts';
import type { EventMetadata, EventStore } from '../../infra/event-store/port.ts';
import { handleCommand } from './handle-command.ts';

/** A user's id follows from their e-mail, so signing in twice never makes two users. */
export const userIdForEmail = (email: string) => `usr_${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 24)}`;

/**
 * An e-mail address as Relay keeps it, or undefined: a bare envelope address (RFC 5321, parsed by
 * smtp-address-parser: no display name, no `<…>`, no comment, no group, a fully qualified domain),
 * trimmed, its domain in ASCII (an internationalised name as punycode), all in lower case, at most
 * 254 characters. The user, the sign-in limits and the mail's recipient all take this one form, so
 * `x1<victim@example.com>` is no way around the per-address limit (issue 23): it is refused.
 * Quoted local parts and address literals (`[127.0.0.1]`) are refused too.
 */
export const emailOrUndefined = (email: string): string | undefined => {
  const trimmed = email.trim();
  if (textProblem(trimmed, TEXT_LIMITS.email, true)) return undefined;
  let parsed: { localPart: { DotString?: string }; domainPart: { DomainName?: string } };
  try {
    parsed = parseSmtpAddress(trimmed) as typeof parsed;
  } catch {
    return undefined;
  }
  const local = parsed.localPart.DotString;
  const domain = parsed.domainPart.DomainName === undefined ? '' : domainToASCII(parsed.domainPart.DomainName);
  if (local === undefined || domain === '') return undefined;
  const normalised = `${local}@${domain}`.toLowerCase();
  return textProblem(normalised, TEXT_LIMITS.email, true) ? undefined : normalised;
};

/** An e-mail address as Relay keeps it (throws when it is not one). */
export const normaliseEmail = (email: string): string => {
  const normalised = emailOrUndefined(email);
  if (normalised === undefined) throw new Error(`Not an e-mail address: ${JSON.stringify(email.slice(0, 300))}`);
  return normalised;
};

export interface StartedSession {
  readonly userId: string;
  readonly sessionId: string;
  /** The `relay_session` cookie's value: only its hash is kept. */
  readonly token: string;
  readonly expiresAt: Date;
}

/** Registers the user of the address if they are new, and starts a dashboard session of theirs. */
export const startSessionFor = async (
  store: EventStore,
  email: string,
  options: { name?: string | undefined; ttlHours: number; metadata: EventMetadata },
): Promise<StartedSession> => {
  const normalised = normaliseEmail(email);
  const userId = userIdForEmail(normalised);
  const stream = userStreamName(userId);
  const registered = await handleCommand(
    store,
    stream,
    userDecider,
    { type: 'RegisterUser', data: { userId, email: normalised, name: options.name?.trim() || normalised.split('@')[0]!, now: new Date() } },
    options.metadata,
  );
  if (!registered.ok) throw new Error(registered.error.message);
  const token = `rls_${randomBytes(32).toString('base64url')}`;
  const now = new Date();
  const sessionId = newId.session();
  const expiresAt = new Date(now.getTime() + options.ttlHours * 3_600_000);
  const started = await handleCommand(store, stream, userDecider, { type: 'StartSession', data: { sessionId, tokenHash: hashKey(token), expiresAt, now } }, options.metadata);
  if (!started.ok) throw new Error(started.error.message);
  return { userId, sessionId, token, expiresAt };
};
