/**
 * signal-cli's `receive` notifications (`{ envelope, account }`) as inbound messages. Only a data
 * message with text is one: receipts, typing indicators, sync messages of the account's own
 * devices, and attachments without text are not (they are skipped without a trace).
 */
import { z } from 'zod';
import type { GroupActivity, InboundFromContact } from '../port.ts';

const receiveParams = z.object({
  account: z.string().min(1),
  envelope: z.object({
    source: z.string().nullish(),
    sourceNumber: z.string().nullish(),
    sourceUuid: z.string().nullish(),
    timestamp: z.number().int(),
    dataMessage: z
      .object({
        timestamp: z.number().int().nullish(),
        message: z.string().nullish(),
        groupInfo: z.object({ groupId: z.string().min(1), type: z.string().nullish() }).passthrough().nullish(),
      })
      .nullish(),
  }),
});

export type EnvelopeReading =
  | { readonly kind: 'message'; readonly message: InboundFromContact }
  /** A group of the account changed (signal-cli's `groupInfo.type` `UPDATE`: members, admins, link). */
  | { readonly kind: 'group-update'; readonly activity: GroupActivity }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'malformed'; readonly reason: string };

/**
 * The sender is the contact's number when Signal shows it, else their ACI (a UUID): the contactId
 * a reply must use. The messenger's own id of a message is its sender and timestamp (Signal names
 * a message that way), so a notification handed twice is recorded once.
 */
export const readEnvelope = (params: unknown): EnvelopeReading => {
  const parsed = receiveParams.safeParse(params);
  if (!parsed.success) return { kind: 'malformed', reason: `a receive notification of unexpected shape (${parsed.error.issues[0]?.path.join('.') ?? '?'})` };
  const { account, envelope } = parsed.data;
  const data = envelope.dataMessage;
  if (data?.groupInfo?.type === 'UPDATE' && !data.message) return { kind: 'group-update', activity: { messenger: 'signal', to: account, groupId: data.groupInfo.groupId } };
  if (!data || typeof data.message !== 'string' || data.message === '') return { kind: 'skipped' };
  const contactId = envelope.sourceNumber ?? envelope.sourceUuid ?? envelope.source;
  if (!contactId) return { kind: 'malformed', reason: 'a data message without a sender' };
  const timestamp = data.timestamp ?? envelope.timestamp;
  return {
    kind: 'message',
    message: {
      messenger: 'signal',
      to: account,
      contactId,
      text: data.message,
      ...(data.groupInfo ? { groupId: data.groupInfo.groupId } : {}),
      timestamp,
      externalId: `${envelope.sourceUuid ?? contactId}:${timestamp}`,
    },
  };
};
