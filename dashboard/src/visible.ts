/**
 * Asking again while the page is seen: `tick` every `everyMs` while the tab is visible, once more
 * when it becomes visible again, never while it is hidden (a tab left in the background costs
 * nothing).
 */
import { useEffect, useRef } from 'preact/hooks';

export const useWhileVisible = (tick: () => void, everyMs: number): void => {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const stop = () => {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    };
    const start = () => {
      stop();
      if (document.visibilityState === 'visible') timer = setInterval(() => latest.current(), everyMs);
    };
    const changed = () => {
      if (document.visibilityState === 'visible') latest.current();
      start();
    };
    start();
    document.addEventListener('visibilitychange', changed);
    return () => {
      stop();
      document.removeEventListener('visibilitychange', changed);
    };
  }, [everyMs]);
};
