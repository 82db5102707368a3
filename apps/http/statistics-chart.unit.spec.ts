import { describe, expect, it } from 'vitest';
import { barsOf, chartGroup, CHARTED, liveCharts, scaleOf, type ChartFrame, type ChartSeries } from './statistics-chart.ts';

const FROM = Date.parse('2026-01-02T11:37:00Z');
const HOUR: ChartFrame = { window: 'hour', fromMs: FROM, stepMs: 60_000, bars: 60 };
const series = (values: Partial<Record<(typeof CHARTED)[number], Record<number, number>>>, bars = 60): ChartSeries =>
  Object.fromEntries(CHARTED.map((figure) => [figure, Array.from({ length: bars }, (_, i) => values[figure]?.[i] ?? 0)])) as unknown as ChartSeries;
/** Each chart's bars as [count, height], by figure. */
const barsIn = (html: string): Record<string, Array<[number, number]>> =>
  Object.fromEntries(
    [...html.matchAll(/data-chart="(\w+)">(.*?)<\/figure>/g)].map(([, figure, chart]) => [figure, [...chart!.matchAll(/height="([\d.]+)" data-value="(\d+)"/g)].map(([, h, v]): [number, number] => [Number(v), Number(h)])]),
  );

describe('the statistics charts', () => {
  it('choose a scale of 1, 2 or 5 times a power of ten per tick, at most five ticks above 0', () => {
    expect([0, 1, 4, 9, 10, 11, 48, 999, 12_345].map(scaleOf)).toEqual([
      { top: 1, step: 1 },
      { top: 1, step: 1 },
      { top: 4, step: 1 },
      { top: 10, step: 2 },
      { top: 10, step: 2 },
      { top: 15, step: 5 },
      { top: 50, step: 10 },
      { top: 1000, step: 200 },
      { top: 15_000, step: 5000 },
    ]);
  });

  it('draw every chart of a group on one scale: 9 accepted stand nine times as tall as 1 failed', () => {
    const html = chartGroup(series({ accepted: { 59: 9 }, failed: { 59: 1 }, delivered: { 58: 3, 59: 5 } }), HOUR, 'All apps');
    const drawn = barsIn(html);
    expect(drawn.accepted).toEqual([[9, expect.any(Number)]]);
    expect(drawn.accepted![0]![1] / drawn.failed![0]![1]).toBeCloseTo(9, 9);
    expect(drawn.delivered!.map(([v, h]) => h / v)).toEqual([drawn.failed![0]![1], drawn.failed![0]![1]]);
    expect(html).toContain('<figcaption>Accepted in the last hour, per minute: 9 in all</figcaption>');
    expect(html).toContain('<title>12:36–12:37 UTC: 9 accepted</title>');
    expect([...html.matchAll(/data-chart="accepted".*?<\/figure>/g)][0]![0].match(/data-tick>(\w+)</g)).toEqual(['data-tick>0<', 'data-tick>2<', 'data-tick>4<', 'data-tick>6<', 'data-tick>8<', 'data-tick>10<']);
    // The hour's 10-minute marks, from 11:40 to 12:30.
    expect([...new Set([...html.matchAll(/data-time>([\d:]+)</g)].map(([, t]) => t))]).toEqual(['11:40', '11:50', '12:00', '12:10', '12:20', '12:30']);
    // The figures of each minute that has any, in a table.
    expect(html).toContain('<tr><th scope="row">12:35–12:36 UTC</th><td data-label="Accepted">0</td><td data-label="Delivered">3</td>');
    expect(html.match(/<tr><th scope="row">/g)).toHaveLength(2);
  });

  it('sum the day’s 5-minute buckets by hour', () => {
    const fives = series({ accepted: { 0: 1, 11: 2, 12: 4, 287: 8 } }, 288);
    const { frame, series: hours } = barsOf(fives, 'day', FROM, 300_000);
    expect(frame).toEqual({ window: 'day', fromMs: FROM, stepMs: 3_600_000, bars: 24 });
    expect([hours.accepted[0], hours.accepted[1], hours.accepted[23], hours.accepted.length]).toEqual([3, 4, 8, 24]);
    expect(chartGroup(hours, frame, 'One app')).toContain('<figcaption>Accepted in the last 24 hours, per hour: 15 in all</figcaption>');
  });

  it('put a page’s app charts on the page’s scale, and escape what users named', () => {
    const html = liveCharts({
      totals: {},
      subject: 'All apps',
      frame: HOUR,
      series: series({ accepted: { 1: 20 } }),
      apps: [{ appId: 'app_1', name: '<b>Bot</b>', series: series({ accepted: { 1: 2 } }) }],
      appsLeftOut: 0,
    });
    expect(html.match(/data-scale-top="(\d+)"/g)).toEqual(['data-scale-top="20"', 'data-scale-top="20"']);
    expect(html).toContain('&#60;b&#62;Bot&#60;/b&#62;');
    expect(html).not.toContain('<b>');
  });
});
