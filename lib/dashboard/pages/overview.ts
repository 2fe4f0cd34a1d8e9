// Overview: money at a glance, the last 30 days of spend and requests, and how to connect.
import { barChart, type Bar } from '../chart.js';
import type { AccountContext } from '../context.js';
import { count, DAY_MS, isoDay, money, shortDay, usd } from '../format.js';
import { sendHtml, siteOrigin } from '../http.js';
import { html } from '../html.js';
import { appPage, type Notice } from '../layout.js';
import { page, type Route } from '../router.js';
import { spendBreakdown } from './overview-spend.js';

const DAYS = 30;

const NOTICES: Record<string, Notice> = {
  welcome: { kind: 'success', text: 'Your account is ready. Add credit and create an API key to make your first request.' },
};

/** Month-to-date spend of the account: the sum over its keys (revoked ones included). */
export async function monthSpend(ctx: AccountContext): Promise<number> {
  const { keys, ledger } = ctx.deps.store;
  let total = 0;
  for (const k of await keys.list(ctx.account.id)) total += await ledger.monthToDate(k.id);
  return total;
}

async function overview(ctx: AccountContext): Promise<void> {
  const { store } = ctx.deps;
  const id = ctx.account.id;
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const from = today - (DAYS - 1) * DAY_MS;
  const [bal, keys, spent, daily] = await Promise.all([
    store.ledger.balance(id), store.keys.list(id), monthSpend(ctx), store.history.daily(id, from, today + DAY_MS),
  ]);
  const byDay = new Map(daily.map((d) => [d.day, d]));
  const days = Array.from({ length: DAYS }, (_, i) => byDay.get(from + i * DAY_MS) ?? { day: from + i * DAY_MS, requests: 0, costNano: 0 });
  const tip = (d: (typeof days)[number]) => `${isoDay(d.day)}: ${usd(d.costNano)} · ${count(d.requests)} request${d.requests === 1 ? '' : 's'}`;
  const spendBars: Bar[] = days.map((d) => ({ day: d.day, value: d.costNano, tip: tip(d) }));
  const requestBars: Bar[] = days.map((d) => ({ day: d.day, value: d.requests, tip: tip(d) }));
  const totals = days.reduce((a, d) => ({ cost: a.cost + d.costNano, requests: a.requests + d.requests }), { cost: 0, requests: 0 });
  const activeKeys = keys.filter((k) => k.revokedAt === null).length;
  const origin = siteOrigin(ctx.req, ctx.config.dashboard.public_url);

  const steps = [
    { done: bal.balance > 0, text: html`<a href="/dashboard/credits">Add credit</a> to your balance` },
    { done: activeKeys > 0, text: html`<a href="/dashboard/keys">Create an API key</a>` },
    { done: totals.requests > 0, text: html`Send a request to <code>${origin}/v1/chat/completions</code> with your key` },
  ];

  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'overview',
    title: 'Overview',
    notice: NOTICES[ctx.url.searchParams.get('notice') ?? ''],
    body: html`
    <section class="stats">
      <div class="stat"><div class="stat-label">Available balance</div><div class="stat-value" data-testid="balance">${money(bal.available)}</div>
        <div class="stat-sub">balance ${money(bal.balance)}, less holds</div></div>
      <div class="stat"><div class="stat-label">Held</div><div class="stat-value" data-testid="held">${money(bal.held)}</div>
        <div class="stat-sub">reserved by requests in progress</div></div>
      <div class="stat"><div class="stat-label">Spend this month</div><div class="stat-value" data-testid="month-spend">${money(spent)}</div>
        <div class="stat-sub">since the 1st, UTC</div></div>
      <div class="stat"><div class="stat-label">Requests, last ${DAYS} days</div><div class="stat-value">${count(totals.requests)}</div>
        <div class="stat-sub">${money(totals.cost)} in total</div></div>
    </section>
    ${steps.some((s) => !s.done) && html`<section class="card">
      <h2>Get started</h2>
      <ol class="checklist">${steps.map((s) => html`<li class="${s.done ? 'done' : ''}">${s.text}</li>`)}</ol>
    </section>`}
    <section class="charts">
      <div class="card"><h2>Spend per day</h2>
        ${barChart({ label: `Spend per day over the last ${DAYS} days`, bars: spendBars, axis: (v) => usd(Math.round(v)), dayLabel: shortDay, emptyText: 'No spend yet' })}</div>
      <div class="card"><h2>Requests per day</h2>
        ${barChart({ label: `Requests per day over the last ${DAYS} days`, bars: requestBars, axis: (v) => (Number.isInteger(v) ? count(v) : ''), dayLabel: shortDay, emptyText: 'No requests yet' })}</div>
    </section>
    <p class="muted small">Days are UTC. Hover over a day for its figures.</p>
    ${await spendBreakdown(ctx, from, today + DAY_MS)}
    <section class="card">
      <h2>Connect</h2>
      <dl class="pairs">
        <dt>Chat-completions clients (OpenAI SDKs)</dt><dd><code>${origin}/v1</code></dd>
        <dt>Messages clients (Anthropic SDKs)</dt><dd><code>${origin}</code></dd>
        <dt>Authentication</dt><dd><code>Authorization: Bearer sk-service-…</code> or <code>x-api-key</code></dd>
      </dl>
    </section>`,
  }));
}

export const overviewRoutes: Route[] = [page('/dashboard', overview)];
