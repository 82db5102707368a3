import type { Consumer } from 'kafkajs';

/** A promise settled from outside, once. */
const settleable = () => {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  return { settled, settle };
};

/**
 * Whether a kafkajs member's join has ended (joined, or crashed for good), across the restarts
 * kafkajs makes after a crash: `untilSettled` resolves once no join is under way. kafkajs cannot
 * abandon a join, and disconnecting under one leaves a member behind that holds its partitions
 * (measured: a group stuck in CompletingRebalance), so a member is stopped only after it.
 */
export const trackJoin = (consumer: Consumer) => {
  let joining = settleable();
  consumer.on(consumer.events.GROUP_JOIN, () => joining.settle());
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    joining.settle();
    if (payload.restart) joining = settleable();
  });
  return {
    async untilSettled(): Promise<void> {
      for (let current = joining; ; current = joining) {
        await current.settled;
        // kafkajs says "joined" a few promise turns before its runner counts as running (and so as
        // something to stop, which makes it leave the group): let those turns pass.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (current === joining) break;
      }
    },
  };
};
