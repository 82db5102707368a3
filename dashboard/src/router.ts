/** Pages live at real paths under /dashboard; links change the page without reloading it. */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';

const listeners = new Set<() => void>();

export const navigate = (to: string): void => {
  if (location.pathname + location.search === to) return;
  history.pushState(null, '', to);
  for (const listener of listeners) listener();
};

/** The current path (and query), updated on navigation and on the browser's back and forward. */
export const useLocation = (): { path: string; query: URLSearchParams } => {
  const [, setTick] = useState(0);
  useEffect(() => {
    const changed = () => setTick((n) => n + 1);
    listeners.add(changed);
    addEventListener('popstate', changed);
    return () => {
      listeners.delete(changed);
      removeEventListener('popstate', changed);
    };
  }, []);
  return { path: location.pathname.replace(/\/+$/, '') || BASE, query: new URLSearchParams(location.search) };
};

/** A click on a same-origin link under /dashboard is handled here, unless a modifier asks for a new tab. */
export const interceptLinks = (): void => {
  document.addEventListener('click', (event) => {
    const link = (event.target as Element | null)?.closest?.('a');
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(`${BASE}/`) && url.pathname !== BASE) return;
    if (url.pathname.startsWith(`${BASE}/api/`) || url.pathname.startsWith(`${BASE}/auth/`) || url.pathname.startsWith(`${BASE}/stats`) || link.target) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
};
