/** What every payment processor answers alike, whatever its chain: its health, and its payments' order. */
import { PaymentProcessorUnavailableError, type ObservedPayment, type ProcessorHealth } from './port.ts';

/** Reachable at the height `readHeight` gives; not reachable, and why, when the processor is unavailable. Any other failure is thrown. */
export const healthOf = async (readHeight: () => Promise<number> | number): Promise<ProcessorHealth> => {
  try {
    return { reachable: true, height: await readHeight() };
  } catch (error) {
    if (error instanceof PaymentProcessorUnavailableError) return { reachable: false, reason: error.message };
    throw error;
  }
};

/** Oldest first: by height (the pool last), then arrival, then id. */
export const sortPayments = (payments: ObservedPayment[]): ObservedPayment[] => {
  const order = (p: ObservedPayment) => (p.height === null ? Number.MAX_SAFE_INTEGER : p.height);
  return payments.sort((a, b) => order(a) - order(b) || a.receivedAt.getTime() - b.receivedAt.getTime() || (a.paymentId < b.paymentId ? -1 : 1));
};
