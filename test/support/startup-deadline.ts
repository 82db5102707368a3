/**
 * How long a test waits for something it started (a Relay process, its delivery pipeline) to be
 * ready. The wait ends as soon as the thing answers; this is only the ceiling past which it
 * counts as never starting. Generous, since a busy machine can take many times a quiet one's
 * start-up: `RELAY_TEST_STARTUP_MS` sets it (default 120000).
 */
export const startupDeadlineMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env.RELAY_TEST_STARTUP_MS;
  if (raw === undefined || raw === '') return 120_000;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1) throw new Error(`RELAY_TEST_STARTUP_MS must be a positive whole number of milliseconds, got ${JSON.stringify(raw)}`);
  return ms;
};
