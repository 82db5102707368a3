import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { assetAmountOf, formatPrice, purchasablePlan } from '../../../domain/billing/plans.ts';
import { INVOICE_ERRORS, invoiceDecider, invoiceStreamName } from '../../../domain/invoice/decider.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { PaymentProcessorUnavailableError } from '../../../infra/payment/port.ts';
import type { RelayContext } from '../../services/context.ts';
import type { Billing } from '../../services/payments.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { fail, failDomain } from '../errors.ts';
import { invoiceView, paymentStatusView } from '../invoice-views.ts';
import { createInvoiceBody } from '../schemas.ts';
import { cancelledInvoiceResponse, invoiceResponse, invoicesResponse, paymentStatusResponse } from '../billing-schemas.ts';
import { requireUser } from '../session.ts';

/** Open invoices one user may have at once (each holds an address of the merchant's wallet). */
export const MAX_OPEN_INVOICES = 5;

const invoiceParams = z.object({ invoiceId: z.string().max(64) });

/**
 * The interface's invoices (docs/billing.md): `POST /invoices {asset, planId}` prices the plan in
 * the asset at the operator's rate, fixed into the invoice, and asks the payment processor for an
 * address of its own; the payment watcher (apps/pipeline/payment-watcher.ts) advances it from
 * what the processor sees. Another user's invoice is 400 `Invoice not found`, like any unknown one.
 */
export const invoiceRoutes =
  (ctx: RelayContext, billing: Billing): FastifyPluginAsyncZod =>
  async (app) => {
    const mine = (userId: string, invoiceId: string) => {
      const invoice = ctx.models.invoices.invoice(invoiceId);
      return invoice && invoice.userId === userId ? invoice : undefined;
    };

    app.post('/invoices', { schema: { summary: 'Creates an invoice for a paid plan, payable in an offered asset', body: createInvoiceBody, response: { 200: invoiceResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const { processor, rate, decimals } = billing;
      if (!processor || !rate || decimals === undefined || request.body.asset !== processor.asset) return fail(reply, 400, 'Unsupported asset');
      const plan = purchasablePlan(billing.prices, request.body.planId);
      if (!plan) return fail(reply, 400, 'Unknown plan');
      const open = ctx.models.invoices.invoicesOf(user.id).filter((i) => i.status === 'pending' || i.status === 'confirming').length;
      if (open >= MAX_OPEN_INVOICES) return fail(reply, 400, `Invoice limit reached: at most ${MAX_OPEN_INVOICES} open per user`);
      const invoiceId = newId.invoice();
      const amount = assetAmountOf(plan.priceCents, rate, decimals);
      // The processor's failure to answer is its UnavailableError: the error handler's 503. A
      // wallet restored from its keys may hand out an address an invoice has already: asked again.
      let address = await processor.createAddress({ invoiceId, amount, description: `Relay ${plan.id} (${invoiceId})` });
      for (let again = 0; ctx.models.invoices.hasAddress(processor.asset, processor.network, address.addressIndex); again++) {
        if (again >= 2) throw new PaymentProcessorUnavailableError('The wallet keeps handing out addresses that invoices have already');
        address = await processor.createAddress({ invoiceId, amount, description: `Relay ${plan.id} (${invoiceId})` });
      }
      const now = new Date();
      const result = await handleCommand(
        ctx.store,
        invoiceStreamName(invoiceId),
        invoiceDecider,
        {
          type: 'CreateInvoice',
          data: {
            invoiceId,
            userId: user.id,
            planId: plan.id,
            period: plan.period,
            asset: processor.asset,
            network: processor.network,
            amount,
            price: formatPrice(plan.priceCents),
            currency: billing.prices.currency,
            address: address.address,
            addressIndex: address.addressIndex,
            paymentUri: address.paymentUri,
            requiredConfirmations: ctx.config.PAYMENT_CONFIRMATIONS,
            expiresAt: new Date(now.getTime() + ctx.config.INVOICE_TTL_SECONDS * 1000),
            monitoringExpiresAt: new Date(now.getTime() + (ctx.config.INVOICE_TTL_SECONDS + ctx.config.INVOICE_MONITORING_SECONDS) * 1000),
            now,
          },
        },
        { actor: `user:${user.id}`, correlationId: request.id },
        { newStream: true },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      const invoice = ctx.models.invoices.invoice(invoiceId);
      if (!invoice) throw new Error(`The invoice ${invoiceId} is not in the read model after its creation`);
      return reply.send(invoiceView(invoice));
    });

    app.get('/invoices', { schema: { summary: "The user's invoices, newest first", response: { 200: invoicesResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return {
        items: ctx.models.invoices.invoicesOf(user.id).map(invoiceView),
        subscription: { tier: ctx.models.users.tierOf(user.id), paidUntil: ctx.models.users.user(user.id)?.paidUntil ?? null },
      };
    });

    app.get('/invoices/:invoiceId', { schema: { summary: 'One invoice of the user', params: invoiceParams, response: { 200: invoiceResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const invoice = mine(user.id, request.params.invoiceId);
      return invoice ? invoiceView(invoice) : fail(reply, 400, INVOICE_ERRORS.notFound);
    });

    app.get('/invoices/:invoiceId/payment-status', { schema: { summary: 'Where the payment of an invoice stands: its status and every payment seen', params: invoiceParams, response: { 200: paymentStatusResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const invoice = mine(user.id, request.params.invoiceId);
      return invoice ? paymentStatusView(invoice) : fail(reply, 400, INVOICE_ERRORS.notFound);
    });

    app.post('/invoices/:invoiceId/cancel', { schema: { summary: 'Cancels an invoice that is still pending', params: invoiceParams, response: { 200: cancelledInvoiceResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const { invoiceId } = request.params;
      if (!mine(user.id, invoiceId)) return fail(reply, 400, INVOICE_ERRORS.notFound);
      const result = await handleCommand(
        ctx.store,
        invoiceStreamName(invoiceId),
        invoiceDecider,
        { type: 'CancelInvoice', data: { userId: user.id, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { success: true as const, data: invoiceView(ctx.models.invoices.invoice(invoiceId)!) };
    });
  };
