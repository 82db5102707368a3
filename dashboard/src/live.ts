/**
 * The live statistics page's figures (`/dashboard/stats/live`, rendered by Relay), following the
 * Server-Sent Events of `/dashboard/stats/live/events`. A browser opens at most six connections to
 * one host over HTTP/1.1, and an event stream holds one for as long as its page is open: with one
 * stream per tab, a seventh dashboard tab did not load at all. So the tabs share one stream per
 * view (all apps, or one app): the tab holding the view's Web Lock opens the EventSource and passes
 * each update on through a BroadcastChannel; the others listen. When that tab closes, its lock is
 * released and a waiting tab takes the stream over. Where Web Locks are missing (a page served
 * over plain HTTP from another host than localhost is no secure context), each tab has its own.
 *
 * Each update carries the page's figures (LiveFigures): the totals table's cells are set, and the
 * charts redrawn by the code that drew them on the server (apps/http/statistics-chart.ts), keeping
 * the figures' tables open that the reader opened, and the focus on their summary.
 */
import { liveCharts, type LiveFigures } from '../../apps/http/statistics-chart.ts';

type Said = { type: 'statistics'; figures: LiveFigures } | { type: 'state'; text: string } | { type: 'hello' };

const STOPPED = 'Stopped: sign in again to follow the figures.';

export const startLiveFigures = (): void => {
  const url = new URL('/dashboard/stats/live/events', location.href);
  const app = new URLSearchParams(location.search).get('app');
  if (app) url.searchParams.set('app', app);
  const state = document.querySelector<HTMLElement>('[data-live-state]');

  const charts = document.querySelector<HTMLElement>('[data-live-charts]');

  const redraw = (figures: LiveFigures) => {
    if (!charts) return;
    const details = [...charts.querySelectorAll('details')];
    const open = new Set(details.flatMap((d, i) => (d.open ? [i] : [])));
    const focus = details.findIndex((d) => d.querySelector('summary') === document.activeElement);
    charts.innerHTML = liveCharts(figures);
    charts.querySelectorAll('details').forEach((d, i) => {
      if (open.has(i)) d.open = true;
      if (i === focus) d.querySelector('summary')?.focus();
    });
  };

  const show = (said: Said) => {
    if (said.type === 'statistics') {
      const { totals } = said.figures;
      for (const cell of document.querySelectorAll<HTMLElement>('[data-figure]')) {
        const figure = cell.dataset.figure;
        if (figure && figure in totals) cell.textContent = String(totals[figure]);
      }
      redraw(said.figures);
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
      source.addEventListener('statistics', (event) => tell({ type: 'statistics', figures: JSON.parse((event as MessageEvent<string>).data) as LiveFigures }));
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
      if (said.type === 'statistics') latest = said;
      channel.postMessage(said);
    });
  });
  channel.postMessage({ type: 'hello' } satisfies Said);
};
