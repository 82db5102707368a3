/**
 * Whether the stores answer, asked at most once per `freshForMs`: concurrent and rapid health
 * checks share one probe, so a health endpoint under load does not become a database load.
 */
export const createHealthProbe = (check: () => Promise<void>, freshForMs: number, now: () => number = Date.now) => {
  let checkedAt = Number.NEGATIVE_INFINITY;
  let last: Promise<boolean> = Promise.resolve(true);
  return (): Promise<boolean> => {
    if (now() - checkedAt < freshForMs) return last;
    checkedAt = now();
    last = check().then(
      () => true,
      () => false,
    );
    return last;
  };
};
