import type { Messenger } from '../shared/messengers.ts';
import type { AppMessengerHealth, AppSettings } from './events.ts';

/** Fresh app-messenger ids, one per messenger, for whichever messengers a command adds. */
export type AppMessengerIds = Record<Messenger, string>;

/**
 * A signing secret the route made (randomness comes in with the command), for the decider to take
 * when the app needs one: it becomes delivered by webhook without one, or its owner asks for a new
 * one (`rotate`). `overlapMs`: how long the secret it replaces still signs.
 */
export interface SigningSecretOffer {
  readonly encrypted: string;
  readonly rotate: boolean;
  readonly overlapMs: number;
}

export type AppCommand =
  | {
      type: 'CreateApp';
      data: {
        appId: string;
        userId: string;
        settings: AppSettings;
        appMessengerIds: AppMessengerIds;
        /** How many live apps the user has now, and how many they may have. */
        liveApps: number;
        maxPerUser: number;
        signingSecret: SigningSecretOffer;
        now: Date;
      };
    }
  | {
      type: 'UpdateApp';
      data: { userId: string; changes: Partial<AppSettings>; appMessengerIds: AppMessengerIds; signingSecret: SigningSecretOffer; now: Date };
    }
  | { type: 'DeleteApp'; data: { userId: string; now: Date } }
  | { type: 'RequestWebhookRetry'; data: { userId: string; now: Date } }
  | { type: 'ProvisionAppMessenger'; data: { appMessengerId: string; address: string; now: Date } }
  | { type: 'RecordAppMessengerHealth'; data: { appMessengerId: string; health: AppMessengerHealth; reason: string | null; now: Date } }
  | {
      type: 'ChangeAppMessengerStatus';
      data: { userId: string; appMessengerId: string; status: 'active' | 'disabled'; now: Date };
    };
