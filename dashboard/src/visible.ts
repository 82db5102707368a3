/**
 * Asking again while the page is seen: `tick` every `everyMs` while the tab is visible, once more
 * when it becomes visible again, never while it is hidden (a tab left in the background costs
 * nothing).
 */
import { useEffect, useRef } from 'preact/hooks';

/** How often an app's page reads it again while seen: its status, health and message log are then at most this old. */
export const APP_REFRESH_MS = 4000;

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
