import type { AttemptOutcome } from '../../domain/delivery/commands.ts';
import { splitForDisplay } from '../../domain/delivery/split-text.ts';
import { RecordsNoLongerHeldError } from '../../infra/broker/port.ts';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import { displayLimitOf } from '../../infra/messenger/messenger-rules.ts';
import { DeliveryWithdrawnError, type MessengerConnector, type OutboundDelivery } from '../../infra/messenger/port.ts';

/**
 * A message whose client asked for it to be split (the send item's `split`): over the messenger's
 * display limit, its numbered parts go out one after the other, from the first part the messenger
 * does not have yet. A failure says how many parts it has, so that the retry goes on from there
 * and no contact gets a part twice; a daemon that goes away before the first part of this attempt
 * is, as for any message, no attempt at all.
 */
export const deliverInParts = async (
  connector: MessengerConnector,
  delivery: OutboundDelivery,
  partsDone: number,
  /**
   * Called right before each part's hand-off with the part's index and delivery, and resolves to
   * what is handed over (the delivery worker confirms its hold on the record and adds the part's
   * kept timestamp, delivery-worker.ts). A rejection before the first part of this attempt is
   * thrown (no attempt); before a later one it ends the attempt as failed with the parts handed so far.
   */
  handOff: (part: number, delivery: OutboundDelivery) => Promise<OutboundDelivery> = (_part, given) => Promise.resolve(given),
): Promise<AttemptOutcome> => {
  const parts = splitForDisplay(delivery.text, displayLimitOf(connector.messenger));
  if (parts.length === 1) return connector.deliver(await handOff(0, delivery));
  for (let i = partsDone; i < parts.length; i++) {
    const done = i > 0 ? { partsDelivered: i } : {};
    let outcome: AttemptOutcome;
    try {
      outcome = await connector.deliver(await handOff(i, { ...delivery, text: parts[i]! }));
    } catch (error) {
      if (i === partsDone && (isUnavailable(error) || error instanceof RecordsNoLongerHeldError || error instanceof DeliveryWithdrawnError)) throw error;
      return { ok: false, permanent: false, reason: `Part ${i + 1} of ${parts.length}: ${error instanceof Error ? error.message : String(error)}`, ...done };
    }
    if (!outcome.ok) return { ...outcome, reason: `Part ${i + 1} of ${parts.length}: ${outcome.reason}`, ...done };
  }
  return { ok: true, parts: parts.length };
};
