/**
 * On stream `signallink-<appMessengerId>`: the slot of a Signal link made from the dashboard
 * (`POST /dashboard/signal/link`), shared by every Relay instance on the same store, so that one
 * app-messenger has one link waiting on the operator's signal-cli daemon at a time. A slot is
 * free again when its link ended, or when it expired (an instance that died holding it).
 */
export type SignalLinkEvent =
  /** A user took the slot and asks the daemon for a link; it is theirs until `expiresAt`. */
  | { type: 'SignalLinkStarted'; data: { linkId: string; appMessengerId: string; appId: string; userId: string; expiresAt: string; startedAt: string } }
  /** The link ended: the phone linked an account (bound to the bot), or it failed (the daemon's reason, or the phone did not scan in time). */
  | { type: 'SignalLinkEnded'; data: { linkId: string; appMessengerId: string; outcome: 'linked' | 'failed'; reason: string | null; endedAt: string } };
