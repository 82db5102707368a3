/**
 * Whether the stores answer, asked at most once per `freshForMs`: concurrent and rapid health
 * checks share one probe, so a health endpoint under load does not become a database load. While
 * the last answer is fresh and known it is returned as it is, not as a promise (a health check
 * under load then costs no await: issue 28, item 5).
 */
export const createHealthProbe = (check: () => Promise<void>, freshForMs: number, now: () => number = Date.now) => {
  let checkedAt = Number.NEGATIVE_INFINITY;
  /** The last answer once known; undefined while its check runs. */
  let known: boolean | undefined = true;
  let last: Promise<boolean> = Promise.resolve(true);
  return (): boolean | Promise<boolean> => {
    if (now() - checkedAt < freshForMs) return known ?? last;
    checkedAt = now();
    known = undefined;
    const asked = check().then(
      () => true,
      () => false,
    );
    last = asked;
    void asked.then((answer) => {
      if (last === asked) known = answer;
    });
    return last;
  };
};
