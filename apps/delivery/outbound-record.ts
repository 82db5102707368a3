import type { OutboundMessage } from '../../domain/outbound/message.ts';

/** The value of a record on `outbound.<messenger>` and `outbound.retry.<n>`. */
export interface OutboundRecord {
  message: OutboundMessage;
  attempt: number;
}
