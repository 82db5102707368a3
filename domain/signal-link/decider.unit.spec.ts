import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { SignalLinkCommand } from './commands.ts';
import { SIGNAL_LINK_ERRORS, signalLinkDecider } from './decider.ts';
import type { SignalLinkEvent } from './events.ts';

const now = new Date('2026-03-04T05:06:07.000Z');
const later = new Date(now.getTime() + 5 * 60_000 + 1);
const spec = deciderSpec(signalLinkDecider);

const start = (linkId: string, at = now): SignalLinkCommand => ({
  type: 'StartSignalLink',
  data: { linkId, appMessengerId: 'am_1', appId: 'app_1', userId: 'usr_1', expiresAt: new Date(at.getTime() + 5 * 60_000), now: at },
});
const started = (linkId: string, at = now): SignalLinkEvent => ({
  type: 'SignalLinkStarted',
  data: { linkId, appMessengerId: 'am_1', appId: 'app_1', userId: 'usr_1', expiresAt: new Date(at.getTime() + 5 * 60_000).toISOString(), startedAt: at.toISOString() },
});
const end = (linkId: string, outcome: 'linked' | 'failed' = 'failed'): SignalLinkCommand => ({ type: 'EndSignalLink', data: { linkId, outcome, reason: outcome === 'failed' ? 'no phone' : null, now } });
const ended = (linkId: string, outcome: 'linked' | 'failed' = 'failed'): SignalLinkEvent => ({
  type: 'SignalLinkEnded',
  data: { linkId, appMessengerId: 'am_1', outcome, reason: outcome === 'failed' ? 'no phone' : null, endedAt: now.toISOString() },
});

describe('signal link decider (issue 47: one link at a time per app-messenger, across instances)', () => {
  it('takes a free slot', () => spec.given([]).when(start('l1')).then([started('l1')]));

  it('refuses a start while another link holds the slot', () => spec.given([started('l1')]).when(start('l2')).thenFails('conflict', SIGNAL_LINK_ERRORS.pending));

  it('frees the slot when its link ends, or when it expired', () => {
    spec.given([started('l1'), ended('l1')]).when(start('l2')).then([started('l2')]);
    spec.given([started('l1')]).when(start('l2', later)).then([started('l2', later)]);
  });

  it('ends its own link only', () => {
    spec.given([started('l1')]).when(end('l1', 'linked')).then([ended('l1', 'linked')]);
    spec.given([started('l1'), started('l2', later)]).when(end('l1')).thenNothingHappens();
    spec.given([started('l1'), ended('l1')]).when(end('l1')).thenNothingHappens();
  });
});
