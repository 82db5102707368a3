import type { Messenger } from '../shared/messengers.ts';
import type { AppMessengerHealth, AppSettings } from './events.ts';

/** Fresh app-messenger ids, one per messenger, for whichever messengers a command adds. */
export type AppMessengerIds = Record<Messenger, string>;

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
        now: Date;
      };
    }
  | {
      type: 'UpdateApp';
      data: { userId: string; changes: Partial<AppSettings>; appMessengerIds: AppMessengerIds; now: Date };
    }
  | { type: 'DeleteApp'; data: { userId: string; now: Date } }
  | { type: 'ProvisionAppMessenger'; data: { appMessengerId: string; address: string; now: Date } }
  | { type: 'RecordAppMessengerHealth'; data: { appMessengerId: string; health: AppMessengerHealth; reason: string | null; now: Date } }
  | {
      type: 'ChangeAppMessengerStatus';
      data: { userId: string; appMessengerId: string; status: 'active' | 'disabled'; now: Date };
    };
