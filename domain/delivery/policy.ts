export interface DeliveryPolicy {
  /** Total attempts, the first included (the interface: 3). */
  maxAttempts: number;
  /** Delay before attempt n+1 after attempt n failed: base × factor^(n-1) (1 s, 4 s by default). */
  baseDelayMs: number;
  factor: number;
}

export const defaultDeliveryPolicy: DeliveryPolicy = { maxAttempts: 3, baseDelayMs: 1000, factor: 4 };

export const retryDelayMs = (policy: DeliveryPolicy, failedAttempt: number) => policy.baseDelayMs * policy.factor ** (failedAttempt - 1);
