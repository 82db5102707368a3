export type SignalLinkCommand =
  | { type: 'StartSignalLink'; data: { linkId: string; appMessengerId: string; appId: string; userId: string; expiresAt: Date; now: Date } }
  | { type: 'EndSignalLink'; data: { linkId: string; outcome: 'linked' | 'failed'; reason: string | null; now: Date } };
