/**
 * Waits for `probe` to give a value (neither undefined nor false), trying again every `intervalMs`
 * (at once when 0), and fails with what it waited for once `timeoutMs` has passed. Free of vitest,
 * so that the bench waits the way the tests do.
 */
export const waitFor = async <T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'condition', intervalMs = 25): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (intervalMs > 0) await new Promise((r) => setTimeout(r, intervalMs));
  }
};
