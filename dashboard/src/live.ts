/**
 * The live statistics page's figures (`/dashboard/stats/live`, rendered by Relay), following the
 * Server-Sent Events of `/dashboard/stats/live/events`. A browser opens at most six connections to
 * one host over HTTP/1.1, and an event stream holds one for as long as its page is open: with one
 * stream per tab, a seventh dashboard tab did not load at all. So the tabs share one stream per
 * view (all apps, or one app): the tab holding the view's Web Lock opens the EventSource and passes
 * each update on through a BroadcastChannel; the others listen. When that tab closes, its lock is
 * released and a waiting tab takes the stream over. Where Web Locks are missing (a page served
 * over plain HTTP from another host than localhost is no secure context), each tab has its own.
 */
type Totals = Record<string, number>;
type Said = { type: 'totals'; totals: Totals } | { type: 'state'; text: string } | { type: 'hello' };

const STOPPED = 'Stopped: sign in again to follow the figures.';

export const startLiveFigures = (): void => {
  const url = new URL('/dashboard/stats/live/events', location.href);
  const app = new URLSearchParams(location.search).get('app');
  if (app) url.searchParams.set('app', app);
  const state = document.querySelector<HTMLElement>('[data-live-state]');

  const show = (said: Said) => {
    if (said.type === 'totals') {
      for (const cell of document.querySelectorAll<HTMLElement>('[data-figure]')) {
        const figure = cell.dataset.figure;
        if (figure && figure in said.totals) cell.textContent = String(said.totals[figure]);
      }
      if (state) state.textContent = `Live: updated ${new Date().toLocaleTimeString()}`;
    } else if (said.type === 'state' && state) state.textContent = said.text;
  };

  /** Follows the stream itself; `pass` hands each update to the other tabs. Resolves when the stream has stopped for good. */
  const follow = (pass: (said: Said) => void) =>
    new Promise<void>((stopped) => {
      const source = new EventSource(url);
      const tell = (said: Said) => {
        show(said);
        pass(said);
      };
      source.addEventListener('totals', (event) => tell({ type: 'totals', totals: JSON.parse((event as MessageEvent<string>).data) as Totals }));
      source.addEventListener('error', () => {
        const closed = source.readyState === EventSource.CLOSED;
        tell({ type: 'state', text: closed ? STOPPED : 'Reconnecting…' });
        if (closed) stopped();
      });
    });

  if (!('locks' in navigator) || typeof BroadcastChannel === 'undefined') {
    void follow(() => undefined);
    return;
  }
  const name = `relay-live-statistics${url.search}`;
  const channel = new BroadcastChannel(name);
  let latest: Said | undefined;
  let leading = false;
  channel.addEventListener('message', (event: MessageEvent<Said>) => {
    if (event.data.type === 'hello') {
      // A tab that just opened gets the last figures at once from the tab holding the stream.
      if (leading && latest) channel.postMessage(latest);
    } else show(event.data);
  });
  // The lock is held as long as this tab follows the stream (until it closes, or the session ends).
  void navigator.locks.request(name, async () => {
    leading = true;
    await follow((said) => {
      if (said.type === 'totals') latest = said;
      channel.postMessage(said);
    });
  });
  channel.postMessage({ type: 'hello' } satisfies Said);
};
