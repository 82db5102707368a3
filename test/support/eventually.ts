/** Runs `check` until it passes (returns without throwing) or `timeoutMs` ran out, then rethrows its last failure. */
export const eventually = async (check: () => unknown | Promise<unknown>, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
};
