import { z } from 'zod';
import { MESSENGERS } from '../../domain/shared/messengers.ts';

/** Shapes of the public API, for validation at the edge and for the OpenAPI document. */
export const errorBody = z.object({ error: z.string() }).meta({ id: 'Error' });

/**
 * An item of a send. The document states the interface's contract (appId, contactId, messenger and
 * message required, messenger one of the three); the validation here only checks the JSON shape
 * (every field absent or a string), so that an item that breaks the contract fails alone, in
 * `failedMessages` with the interface's per-message error, instead of failing its batch with 400
 * (the interface's batch rule 3; domain/send-batch/validate.ts checks each item).
 */
export const sendMessageInput = z
  .object({
    appId: z.string().optional().meta({ minLength: 1 }).describe('Non-empty; one of the key’s appIds.'),
    contactId: z.string().optional().meta({ minLength: 1 }).describe('Non-empty; its format is checked by the messenger.'),
    messenger: z.string().optional().meta({ enum: [...MESSENGERS] }).describe('The messenger to send on (the PolledMessage’s messenger, for a reply).'),
    message: z.string().optional().meta({ minLength: 1 }).describe('1 to 10,000 characters after trimming.'),
    groupId: z.string().optional().describe('Only for replies to a group message.'),
    split: z
      .boolean()
      .optional()
      .describe(
        'Optional. true: a message longer than the messenger’s display limit (signal 2000, simplex 8000, session 2000 characters) is delivered as numbered parts "(k/n) …", cut at word boundaries, in order. Without it such a message fails permanently.',
      ),
  })
  .meta({ id: 'SendMessage', required: ['appId', 'contactId', 'messenger', 'message'] });

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

/** Documents the poll's query; the route reads it itself, to answer in the interface's words (routes/poll.ts). */
export const pollQuery = z.object({
  limit: z.int().min(1).max(50).default(10).describe('How many messages at most, from all the key’s queues together: 1 to 50, default 10'),
});

/** Documents the query of `GET /events`; the route reads it itself, to answer in its own words (routes/events.ts). */
export const eventsQuery = z.object({
  after: z
    .string()
    .regex(/^\d{1,19}$/)
    .optional()
    .describe('The event position (an SSE frame’s id) to continue after, a non-negative integer as a string: the positions pass 2^53. Default 0, the whole history; a Last-Event-ID header takes precedence.'),
  follow: z
    .enum(['true', 'false'])
    .default('true')
    .describe('true: after the history, the stream goes on with new events; false: it ends once the history up to the request is sent.'),
});
export const eventsHeaders = z.object({
  'last-event-id': z.string().regex(/^\d{1,19}$/).optional().describe('What a reconnecting EventSource sends: continue after this position (instead of after).'),
});
/** `GET /events` answers Server-Sent Events: `id` the position, `event` the type, `data` the event as JSON. */
export const eventsResponse = {
  description: 'A stream of Server-Sent Events: each frame has the event’s position as `id`, its type as `event`, and the event as JSON in `data`',
  content: { 'text/event-stream': { schema: z.string() } },
};
export const pollResponse = z.object({ messages: z.array(polledMessage), count: z.number().int(), queue: z.string() });
export type PollResponse = z.infer<typeof pollResponse>;
export const verifyResponse = z.object({ valid: z.literal(true), appIds: z.array(z.string()) });
export const healthResponse = z.object({ status: z.string(), version: z.string() });

export type PolledMessage = z.infer<typeof polledMessage>;
export type SendResponse = z.infer<typeof sendResponse>;
