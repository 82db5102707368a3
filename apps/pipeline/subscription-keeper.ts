import type { Logger } from 'pino';
import type { InvoiceEvent } from '../../domain/invoice/events.ts';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { InvoicesProjection } from '../../projections/invoices/invoices-projection.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { checkpoints } from '../services/topology.ts';

/**
 * Turns each paid invoice into paid time on its owner's stream (`SubscriptionExtended`, once per
 * invoice), behind the `InvoicePaid` events: the send limit of every credential of the user
 * follows at once (the rate limiter reads the tier from the users read model) and lapses when the
 * paid time ends. A crash between the two is finished at the next start, from the checkpoint.
 */
export const startSubscriptionKeeper = async (deps: { readonly store: EventStore; readonly invoices: InvoicesProjection; readonly catchUp: () => Promise<void>; readonly log: Logger }): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(deps.store, {
    name: checkpoints.subscriptionKeeper,
    filter: { categories: ['invoice'], types: ['InvoicePaid'] },
    log: deps.log.child({ component: 'subscriptions' }),
    batchSize: 50,
    handler: async (events) => {
      for (const recorded of events) {
        const event = recorded as unknown as Extract<InvoiceEvent, { type: 'InvoicePaid' }>;
        let invoice = deps.invoices.invoice(event.data.invoiceId);
        if (!invoice) {
          await deps.catchUp();
          invoice = deps.invoices.invoice(event.data.invoiceId);
        }
        if (!invoice) throw new Error(`The paid invoice ${event.data.invoiceId} is not in the read model`);
        const result = await handleCommand(
          deps.store,
          userStreamName(invoice.userId),
          userDecider,
          { type: 'ExtendSubscription', data: { invoiceId: invoice.invoiceId, period: invoice.period, now: new Date(event.data.paidAt) } },
          { actor: 'system:payments', causationId: recorded.id },
        );
        if (!result.ok) throw new Error(`The paid time of invoice ${invoice.invoiceId} was not recorded: ${result.error.message}`);
      }
    },
  });
