// Overview: where the period's spend went, per model and per key, each line linking to its
// requests (the Requests page filtered to that model or key and the period).
import type { HistoryTotals } from '../../store/types.js';
import type { AccountContext } from '../context.js';
import { count, DAY_MS, isoDay, money } from '../format.js';
import { html, type Html } from '../html.js';

/** Lines shown per table; the rest are summed in one "other" line. */
const TOP = 8;

interface Line extends HistoryTotals {
  label: Html | string;
  href: string | null;
}

function table(caption: string, what: string, lines: Line[], testid: string): Html {
  const shown = lines.slice(0, TOP);
  const rest = lines.slice(TOP);
  const other = rest.length > 0 && rest.reduce((s, l) => ({ requests: s.requests + l.requests, costNano: s.costNano + l.costNano }), { requests: 0, costNano: 0 });
  return html`<div class="card flush" data-testid="${testid}"><h2 class="pad">${caption}</h2>
    ${lines.length === 0 ? html`<p class="muted pad">No requests in this period.</p>` : html`<div class="table-wrap"><table class="spend-by">
      <thead><tr><th>${what}</th><th class="num">Requests</th><th class="num">Spend</th></tr></thead>
      <tbody>${shown.map((l) => html`<tr>
        <td><div class="wrap-value">${l.href ? html`<a href="${l.href}">${l.label}</a>` : l.label}</div></td>
        <td class="num">${count(l.requests)}</td><td class="num">${money(l.costNano)}</td></tr>`)}
      ${other && html`<tr><td class="muted">${count(rest.length)} more</td><td class="num">${count(other.requests)}</td><td class="num">${money(other.costNano)}</td></tr>`}</tbody>
    </table></div>`}
  </div>`;
}

/** Spend per model and per key for arrivals in [from, to), as two cards side by side. */
export async function spendBreakdown(ctx: AccountContext, from: number, to: number): Promise<Html> {
  const { history, keys } = ctx.deps.store;
  const period = { from, to };
  const [byModel, byKey, allKeys] = await Promise.all([
    history.totalsBy(ctx.account.id, 'model', period), history.totalsBy(ctx.account.id, 'keyId', period), keys.list(ctx.account.id),
  ]);
  const names = new Map(allKeys.map((k) => [k.id, k]));
  // The Requests page's "to" day is included.
  const range = `from=${isoDay(from)}&to=${isoDay(to - DAY_MS)}`;
  const models: Line[] = byModel.map((g) => ({
    ...g, label: g.group ?? html`<span class="muted">no model (refused)</span>`,
    href: g.group === null ? null : `/dashboard/requests?model=${encodeURIComponent(g.group)}&${range}`,
  }));
  const perKey: Line[] = byKey.map((g) => {
    const k = names.get(g.group);
    return { ...g, label: k ? html`${k.name}${k.revokedAt !== null && html` <span class="muted">(revoked)</span>`}` : `key #${g.group}`, href: `/dashboard/requests?key=${g.group}&${range}` };
  });
  return html`<section class="charts spend-breakdown">
    ${table('Spend by model', 'Model', models, 'spend-by-model')}
    ${table('Spend by key', 'Key', perKey, 'spend-by-key')}
  </section>`;
}
