import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { formatPrice, plansOf } from '../../../domain/billing/plans.ts';
import type { RelayContext } from '../../services/context.ts';
import type { Billing } from '../../services/payments.ts';
import { formatDecimal } from '../../../domain/billing/decimal.ts';
import { configurationResponse } from '../billing-schemas.ts';

/**
 * The billing configuration, readable without a session (docs/billing.md): the currency, the
 * plans with their prices and send limits, the discount for a year, and the assets an invoice
 * can be paid in, each with its network, the operator's rate and the confirmations it needs.
 */
export const configurationRoutes =
  (ctx: RelayContext, billing: Billing): FastifyPluginAsyncZod =>
  async (app) => {
    const { config } = ctx;
    const limits = { free: config.RATE_LIMIT_SEND_FREE_PER_MIN, paid: config.RATE_LIMIT_SEND_PAID_PER_MIN };
    app.get('/configuration', { schema: { summary: 'Billing configuration (no session needed)', security: [], response: { 200: configurationResponse } } }, async () => ({
      success: true as const,
      data: {
        currency: billing.prices.currency,
        annualDiscountPercent: billing.prices.annualDiscountPercent,
        assets:
          billing.processor && billing.rate && billing.decimals !== undefined
            ? [
                {
                  asset: billing.processor.asset,
                  network: billing.processor.network,
                  rate: formatDecimal(billing.rate.units, billing.rate.scale).replace(/\.?0+$/, ''),
                  decimals: billing.decimals,
                  requiredConfirmations: config.PAYMENT_CONFIRMATIONS,
                },
              ]
            : [],
        plans: plansOf(billing.prices).map((plan) => ({
          id: plan.id,
          tier: plan.tier,
          period: plan.period,
          price: formatPrice(plan.priceCents),
          sendPerMinute: limits[plan.tier],
          pollPerMinute: config.RATE_LIMIT_POLL_PER_MIN,
        })),
        invoiceExpiresInSeconds: config.INVOICE_TTL_SECONDS,
      },
    }));
  };
