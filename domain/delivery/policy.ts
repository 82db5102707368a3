export interface DeliveryPolicy {
  /** Total attempts, the first included (the interface: 3). */
  maxAttempts: number;
  /** Delay before attempt n+1 after attempt n failed: base × factor^(n-1) (1 s, 4 s by default). */
  baseDelayMs: number;
  factor: number;
  /**
   * How long a message waits for its bot's identity to be on its daemon before it is abandoned
   * (counted from the first deferral), and the pauses between looks: the first, doubling up to the
   * last (docs/messengers.md).
   */
  identityWaitMs: number;
  deferFirstMs: number;
  deferMaxMs: number;
}

export const defaultDeliveryPolicy: DeliveryPolicy = { maxAttempts: 3, baseDelayMs: 1000, factor: 4, identityWaitMs: 3_600_000, deferFirstMs: 5_000, deferMaxMs: 300_000 };

/** The pause after the `n`-th deferral of a message (1-based). */
export const deferDelayMs = (policy: DeliveryPolicy, deferrals: number) => Math.min(policy.deferMaxMs, policy.deferFirstMs * 2 ** Math.max(0, deferrals - 1));

export const retryDelayMs = (policy: DeliveryPolicy, failedAttempt: number) => policy.baseDelayMs * policy.factor ** (failedAttempt - 1);
