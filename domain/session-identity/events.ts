/** Where a bot's Session identity came from: made by Relay, or imported by an operator (`relay session-messenger import`). */
export type SessionIdentityOrigin = 'new' | 'imported';

/**
 * On stream `sessionidentity-<appMessengerId>`: the Session identity of an app-messenger's bot,
 * written once. `secretEncrypted` is the 16-byte seed (the whole identity) sealed with the
 * operator's secret key (RELAY_SECRET_KEY), bound to the app-messenger; it is withheld from every
 * public event stream and never in clear anywhere. Every Relay instance of a deployment shares the
 * history and the key, so each one can open it: any gateway polls the bot's swarm, any delivery
 * worker sends as the bot.
 */
export type SessionIdentityEvent =
  | {
      type: 'SessionIdentityKept';
      data: { appMessengerId: string; sessionId: string; secretEncrypted: string; origin: SessionIdentityOrigin; keptAt: string };
    }
  | {
      /**
       * The bot's messages may be stamped up to `upTo` (epoch ms): a Relay that starts again stamps
       * after it, so two messages from the bot to one contact never share a timestamp (Session's apps
       * drop the second), across restarts and instances. Written ahead of the stamps it covers, a
       * few seconds at a time, not once per message.
       */
      type: 'SessionSendClockAdvanced';
      data: { appMessengerId: string; upTo: number; advancedAt: string };
    };
