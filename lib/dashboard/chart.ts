// A bar chart of one value per day, drawn on the server as SVG (no script, works offline). Each
// day's column carries a tooltip with its exact figures.
import { html, type Html } from './html.js';

export interface Bar {
  day: number;
  value: number;
  /** Tooltip: the day and its exact figures. */
  tip: string;
}

// Drawn at about the size it is shown (half the content width), so its text reads at 11px.
const W = 460, H = 190;
const LEFT = 56, RIGHT = 20, TOP = 12, BOTTOM = 26;

/** The smallest "round" number (1, 2, 2.5, 5 × 10^n) at or above x. */
function niceCeil(x: number): number {
  const p = 10 ** Math.floor(Math.log10(x));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((v) => v >= x)!;
}

export function barChart(opts: { label: string; bars: Bar[]; axis: (v: number) => string; dayLabel: (day: number) => string; emptyText: string }): Html {
  const { bars } = opts;
  const max = Math.max(0, ...bars.map((b) => b.value));
  const top = max > 0 ? niceCeil(max) : 1;
  const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
  const slot = plotW / Math.max(1, bars.length);
  const y = (v: number) => TOP + plotH - (v / top) * plotH;
  const ticks = [0, top / 2, top];
  const labelEvery = Math.ceil(bars.length / 5);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${opts.label}" preserveAspectRatio="xMidYMid meet">
  ${ticks.map((t) => html`<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"></line>
  <text class="axis" x="${LEFT - 8}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${max > 0 ? opts.axis(t) : t === 0 ? opts.axis(0) : ''}</text>`)}
  ${bars.map((b, i) => {
    const x = LEFT + i * slot + slot * 0.15;
    const h = (b.value / top) * plotH;
    return html`<g>${b.value > 0 ? html`<rect class="bar" x="${x.toFixed(1)}" y="${y(b.value).toFixed(1)}" width="${(slot * 0.7).toFixed(1)}" height="${Math.max(1, h).toFixed(1)}" rx="2"></rect>` : ''}
    <rect class="hit" x="${(LEFT + i * slot).toFixed(1)}" y="${TOP}" width="${slot.toFixed(1)}" height="${plotH}"><title>${b.tip}</title></rect>
    ${(bars.length - 1 - i) % labelEvery === 0 ? html`<text class="axis" x="${(LEFT + i * slot + slot / 2).toFixed(1)}" y="${H - 8}" text-anchor="middle">${opts.dayLabel(b.day)}</text>` : ''}</g>`;
  })}
  ${max === 0 && html`<text class="empty" x="${LEFT + plotW / 2}" y="${TOP + plotH / 2}" text-anchor="middle">${opts.emptyText}</text>`}
</svg>`;
}
