import type { FastifyPluginAsync } from 'fastify';
import type { RelayContext } from '../../boot/context.ts';

/**
 * The billing configuration, readable without a session. Crypto payment (assets, prices) comes
 * with the billing issue; until then no asset is offered and the plans show their limits only.
 */
export const configurationRoutes =
  (ctx: RelayContext): FastifyPluginAsync =>
  async (app) => {
    app.get('/configuration', { schema: { summary: 'Billing configuration (no session needed)', security: [] } }, async () => ({
      success: true,
      data: {
        currency: 'USD',
        annualDiscountPercent: 0,
        assets: [],
        plans: [
          { id: 'free', price: 0, sendPerMinute: ctx.config.RATE_LIMIT_SEND_FREE_PER_MIN, pollPerMinute: ctx.config.RATE_LIMIT_POLL_PER_MIN },
          { id: 'paid', price: null, sendPerMinute: ctx.config.RATE_LIMIT_SEND_PAID_PER_MIN, pollPerMinute: ctx.config.RATE_LIMIT_POLL_PER_MIN },
        ],
      },
    }));
  };
