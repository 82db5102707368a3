import { openSmtpMailer } from '../../infra/mail/mailer.ts';
import type { RelayContext } from '../services/context.ts';
import { openBilling } from '../services/payments.ts';
import type { Connectors } from './connectors.ts';
import { startAlertDispatcher } from '../pipeline/alert-dispatcher.ts';
import { startBodyShredder } from '../pipeline/body-shredder.ts';
import { startEventTopicsPublisher } from '../pipeline/event-topics-publisher.ts';
import { startGroupAdministrator, type GroupAdministrator } from '../pipeline/group-administrator.ts';
import { startIdentityProvisioner } from '../pipeline/identity-provisioner.ts';
import type { LeasedRole, Stoppable } from '../pipeline/leased-roles.ts';
import { messengerAlertSender } from '../pipeline/messenger-alert-sender.ts';
import { startMessengerHealthMonitor } from '../pipeline/messenger-health-monitor.ts';
import { startPaymentWatcher } from '../pipeline/payment-watcher.ts';
import { startQueuePublisher } from '../pipeline/queue-publisher.ts';
import type { BodyOpener } from '../pipeline/sealed-bodies.ts';
import { startSubscriptionKeeper } from '../pipeline/subscription-keeper.ts';
import { inboundAppOf } from '../services/topology.ts';
import { startWebhookDispatcher } from '../pipeline/webhook-dispatcher.ts';

/**
 * The parts of the pipeline that one process of a deployment runs at a time (docs/durability.md),
 * leased among the processes that run the gateway, and among those that deliver. The lists are
 * fixed, whatever the configuration: every process numbers the roles alike, and a role the
 * configuration leaves out runs nothing where it lands (every process of a deployment is meant to
 * run with the same configuration). The delivery worker and poll are not roles: every process
 * takes its part of them (a consumer group, and claims through the event store).
 */
export const GATEWAY_ROLES = ['provisioner', 'groups', 'health'] as const;
export const DELIVERY_ROLES = ['publisher', 'event-topics', 'alerts', 'billing', 'shredder'] as const;

const nothing: Stoppable = { stop: async () => undefined };

/** The gateway's leased roles. `groups` says which group administrator runs here (if any), for the daemons' group events. */
export const gatewayRoles = (ctx: RelayContext, connectors: Connectors, groups: { current: GroupAdministrator | undefined }): LeasedRole[] => {
  const { config } = ctx;
  const roles: Record<(typeof GATEWAY_ROLES)[number], LeasedRole['start']> = {
    provisioner: () => startIdentityProvisioner(ctx.store, connectors.byMessenger, ctx.log),
    groups: async () => {
      const administrator = await startGroupAdministrator({
        store: ctx.store,
        sealer: ctx.sealer,
        apps: ctx.models.apps,
        groups: ctx.models.groups,
        connectors: connectors.byMessenger,
        log: ctx.log,
        syncIntervalMs: config.GROUP_SYNC_INTERVAL_MS,
        syncPerSecond: config.GROUP_SYNC_PER_SECOND,
      });
      groups.current = administrator;
      return {
        stop: async () => {
          if (groups.current === administrator) groups.current = undefined;
          await administrator.stop();
        },
      };
    },
    health: async () =>
      startMessengerHealthMonitor({
        store: ctx.store,
        apps: ctx.models.apps,
        connectors: connectors.byMessenger,
        intervalMs: config.MESSENGER_HEALTH_INTERVAL_MS,
        log: ctx.log.child({ component: 'health' }),
      }),
  };
  return GATEWAY_ROLES.map((name) => ({ name, start: roles[name] }));
};

/** The delivery side's leased roles. */
export const deliveryRoles = (ctx: RelayContext, bodies: BodyOpener): LeasedRole[] => {
  const { config } = ctx;
  const roles: Record<(typeof DELIVERY_ROLES)[number], LeasedRole['start']> = {
    // The publisher wakes the webhook dispatcher when it queues an inbound message: one role.
    publisher: async () => {
      const hooks = startWebhookDispatcher({
        store: ctx.store,
        broker: ctx.broker,
        sealer: ctx.sealer,
        secrets: ctx.secrets,
        apps: ctx.models.apps,
        settings: {
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
          baseDelayMs: config.WEBHOOK_BACKOFF_BASE_MS,
          maxDelayMs: config.WEBHOOK_BACKOFF_MAX_MS,
          idlePollMs: config.WEBHOOK_IDLE_POLL_MS,
          allowLocal: config.WEBHOOK_ALLOW_LOCAL,
        },
        metrics: ctx.metrics,
        log: ctx.log.child({ component: 'webhooks' }),
      });
      try {
        const publisher = await startQueuePublisher(
          ctx.store,
          ctx.broker,
          ctx.log,
          (event) => bodies.remember(event),
          (records) => {
            for (const record of records) {
              const appId = inboundAppOf(record.topic);
              if (appId !== undefined) hooks.wake(appId);
            }
          },
        );
        return {
          stop: async () => {
            await publisher.stop();
            await hooks.stop();
          },
        };
      } catch (error) {
        await hooks.stop();
        throw error;
      }
    },
    // Analytics consumers subscribe to Kafka's events.<category>; nobody outside reads the embedded log.
    'event-topics': async () => (config.BROKER === 'kafka' ? startEventTopicsPublisher(ctx.store, ctx.broker, ctx.log) : nothing),
    // Alerts go by e-mail and through the notification app's bots: with neither, there is no way to tell anyone.
    alerts: async () => {
      if (!config.SMTP_URL && !config.NOTIFICATION_APP_ID) {
        ctx.log.info('neither SMTP_URL nor NOTIFICATION_APP_ID: no alerts are sent');
        return nothing;
      }
      return startAlertDispatcher({
        store: ctx.store,
        sealer: ctx.sealer,
        apps: ctx.models.apps,
        users: ctx.models.users,
        invoices: ctx.models.invoices,
        catchUp: () => ctx.projections.catchUp(),
        mailer: config.SMTP_URL ? await openSmtpMailer(config.SMTP_URL, config.MAIL_FROM) : undefined,
        messengers: config.NOTIFICATION_APP_ID ? messengerAlertSender(ctx, config.NOTIFICATION_APP_ID) : undefined,
        log: ctx.log,
      });
    },
    // Without a payment processor no invoice gets paid: neither the watcher nor the keeper runs (the
    // keeper's checkpoint waits for a processor, should paid invoices be left unhandled).
    billing: async () => {
      const { processor } = await openBilling(config);
      if (!processor) return nothing;
      const keeper = await startSubscriptionKeeper({ store: ctx.store, invoices: ctx.models.invoices, catchUp: () => ctx.projections.catchUp(), log: ctx.log });
      const watcher = startPaymentWatcher({
        store: ctx.store,
        invoices: ctx.models.invoices,
        processor,
        catchUp: () => ctx.projections.catchUp(),
        intervalMs: config.PAYMENT_WATCH_INTERVAL_MS,
        log: ctx.log.child({ component: 'payments' }),
      });
      return {
        stop: async () => {
          await watcher.stop();
          await keeper.stop();
        },
      };
    },
    shredder: async () => startBodyShredder({ store: ctx.store, metrics: ctx.metrics, log: ctx.log.child({ component: 'shredder' }), intervalMs: config.BODY_SHRED_INTERVAL_MS }),
  };
  return DELIVERY_ROLES.map((name) => ({ name, start: roles[name] }));
};
