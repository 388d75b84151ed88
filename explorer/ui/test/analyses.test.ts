import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analysesHtml, binLabel, delayHistogram, rangeHref, type AnalysesView, type RankAnalysisView } from '../src/analyses';
import { parseRoute, routeHash } from '../src/route';

const rank = (r: number, over: Partial<RankAnalysisView> = {}): RankAnalysisView => ({
  rank: r, t0: 1000, t1: 11000, span_ns: 10000, compute_ns: 6000, non_compute_ns: 1000, idle_ns: 3000,
  idle: [
    { kind: 'host_wait', ns: 2000, gaps: 4, t0: 2000, t1: 2900 },
    { kind: 'kernel_wait', ns: 1000, gaps: 10, t0: 5000, t1: 5200 },
    { kind: 'other', ns: 0, gaps: 0, t0: 0, t1: 0 },
  ],
  overlap: { comm_ns: 2000, overlap_ns: 500, exposed_ns: 1500, ratio: 0.25, t0: 8000, t1: 9000 },
  launches: {
    launches: 12, delay_p50_ns: 1500, delay_p90_ns: 4000, delay_max_ns: 9000,
    histogram: [
      { lo_ns: 0, hi_ns: 1000, count: 5, t0: 100, t1: 900 },
      { lo_ns: 1000, hi_ns: 2000, count: 0, t0: 0, t1: 0 },
      { lo_ns: 1000000, hi_ns: -1, count: 7, t0: 3000, t1: 12000 },
    ],
  },
  ...over,
});
const view = (ranks: RankAnalysisView[], slowest: number | null = 1): AnalysesView => ({ ranks, slowest_rank: slowest, warnings: [] });

test('each segment is as wide as its share and links to the timeline range that shows it', () => {
  const html = analysesHtml(3, view([rank(0), rank(1, { compute_ns: 7000, idle_ns: 2000 })]));
  // The breakdown: compute 60% of rank 0's span, linked to the span.
  assert.match(html, /class="seg compute" data-width="60.00%"[^>]*href="#\/p\/3\/timeline\?t0=1000&t1=11000"/);
  // The idle split: host wait 2/3 of the idle time, linked to its longest gap; no "other" segment.
  assert.match(html, /class="seg host-wait" data-width="66.67%"[^>]*href="#\/p\/3\/timeline\?t0=2000&t1=2900"/);
  assert.ok(!/data-kind="other"/.test(html));
  assert.ok(!/style=/.test(html));  // the CSP refuses style attributes: widths go through data-width
  // Overlap: the exposed part links to the longest exposed stretch; the ratio is shown.
  assert.match(html, /class="seg exposed" data-width="75.00%"[^>]*href="#\/p\/3\/timeline\?t0=8000&t1=9000"/);
  assert.match(html, /25%/);
  // The slowest rank is marked, and its histogram is the one open.
  assert.match(html, /rank 1 <span class="tag">slowest<\/span>/);
  assert.equal((html.match(/<details open>/g) ?? []).length, 1);
  assert.match(html, /<details open><summary>rank 1 /);
});

test('the launch-delay histogram links each bin with delays to its longest one', () => {
  const html = delayHistogram(0, rank(0));
  assert.equal((html.match(/class="hrow"/g) ?? []).length, 3);
  assert.match(html, /href="#\/p\/0\/timeline\?t0=100&t1=900"/);
  assert.match(html, /href="#\/p\/0\/timeline\?t0=3000&t1=12000"/);
  assert.equal((html.match(/<a class="hrow"/g) ?? []).length, 2);  // the empty bin links nowhere
  assert.match(html, /data-width="100.0%"/);  // the fullest bin spans the track
  assert.ok(!/style=/.test(html));  // the CSP refuses style attributes
  assert.equal(binLabel({ lo_ns: 1000000, hi_ns: -1 }), '1 ms+');
  assert.equal(binLabel({ lo_ns: 0, hi_ns: 1000 }), '0 ns–1 µs');
});

test('a profile without device work says why instead of drawing empty bars', () => {
  assert.match(analysesHtml(0, view([], null)), /need device events/);
  assert.match(analysesHtml(0, { ranks: [], slowest_rank: null, warnings: ['no device events: <cpu only>'] }), /&lt;cpu only&gt;/);
  assert.match(analysesHtml(0, undefined), /data-testid="analyses-empty"/);
});

test('a timeline route carries a time range both ways', () => {
  assert.equal(rangeHref(2, 10.4, 20.2), '#/p/2/timeline?t0=10&t1=21');
  const r = parseRoute('#/p/2/timeline?t0=-5&t1=40');
  assert.deepEqual(r, { view: 'timeline', id: 2, t0: -5, t1: 40 });
  assert.equal(routeHash(r), '#/p/2/timeline?t0=-5&t1=40');
  // A reversed, empty or half range is ignored.
  assert.deepEqual(parseRoute('#/p/2/timeline?t0=40&t1=5'), { view: 'timeline', id: 2 });
  assert.deepEqual(parseRoute('#/p/2/timeline?t0=4'), { view: 'timeline', id: 2 });
  assert.deepEqual(parseRoute('#/p/2/timeline?t0=a&t1=9'), { view: 'timeline', id: 2 });
});
