import { z } from 'zod';
import { MESSENGERS } from '../../domain/shared/messengers.ts';

/** Shapes of the public API, for validation at the edge and for the OpenAPI document. */
export const errorBody = z.object({ error: z.string() }).meta({ id: 'Error' });

export const sendMessageInput = z
  .object({
    appId: z.string().optional().describe('Non-empty; one of the key’s appIds.'),
    contactId: z.string().optional().describe('Non-empty; its format is checked by the messenger.'),
    messenger: z.string().optional().describe(`One of ${MESSENGERS.join(', ')}.`),
    message: z.string().optional().describe('1 to 10,000 characters after trimming.'),
    groupId: z.string().optional().describe('Only for replies to a group message.'),
    split: z
      .boolean()
      .optional()
      .describe(
        'Optional. true: a message longer than the messenger’s display limit (signal 2000, simplex 8000, session 2000 characters) is delivered as numbered parts "(k/n) …", cut at word boundaries, in order. Without it such a message fails permanently.',
      ),
  })
  .meta({ id: 'SendMessage' });

export const sendBody = z.object({ messages: z.array(sendMessageInput) });

export const successfulMessage = z
  .object({ messageId: z.string(), appId: z.string(), contactId: z.string(), messenger: z.string() })
  .meta({ id: 'SuccessfulMessage' });
export const failedMessage = z
  .object({ appId: z.string(), contactId: z.string(), messenger: z.string(), error: z.string() })
  .meta({ id: 'FailedMessage' });

export const sendResponse = z.object({
  successfulMessages: z.array(successfulMessage),
  failedMessages: z.array(failedMessage),
  totalAccepted: z.number().int(),
  totalFailed: z.number().int(),
});

export const polledMessage = z
  .object({
    appId: z.string(),
    messenger: z.enum(MESSENGERS),
    contactId: z.string(),
    messageId: z.string(),
    content: z.string(),
    timestamp: z.number(),
    groupId: z.string().optional(),
    isGroupMessage: z.boolean(),
    isCommand: z.boolean(),
    command: z.string().optional(),
  })
  .meta({ id: 'PolledMessage' });

export const pollQuery = z.object({ limit: z.string().optional().describe('1 to 50, default 10') });
export const pollResponse = z.object({ messages: z.array(polledMessage), count: z.number().int(), queue: z.string() });
export const verifyResponse = z.object({ valid: z.literal(true), appIds: z.array(z.string()) });
export const healthResponse = z.object({ status: z.string(), version: z.string() });

export type PolledMessage = z.infer<typeof polledMessage>;
export type SendResponse = z.infer<typeof sendResponse>;
