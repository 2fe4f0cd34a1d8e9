// Analytics → Requests: the account's request history, newest first, filtered by model, status and
// date, searchable by request id (the x-request-id header of every response); and one request's
// detail with every attempt.
import type { AttemptOutcome, Route as ApiRoute } from '../../context.js';
import type { HistoryQuery, HistoryRow, HistoryStatus } from '../../store/types.js';
import type { AccountContext } from '../context.js';
import { count, dateTime, DAY_MS, isoDay, milliseconds, timeOfDay, usd } from '../format.js';
import { sendHtml } from '../http.js';
import { html, type Html } from '../html.js';
import { appPage } from '../layout.js';
import { page, type Route } from '../router.js';
import { notFoundPage } from './errors.js';

const PAGE_SIZE = 50;
const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const STATUSES: [HistoryStatus, string][] = [['ok', 'OK'], ['error', 'Error'], ['client_gone', 'Client gone']];
const OUTCOME: Record<AttemptOutcome, [string, string]> = { ok: ['badge-success', 'OK'], failed: ['badge-error', 'Failed'], skipped: ['badge-muted', 'Skipped'] };
const ROUTE_LABEL: Record<ApiRoute, string> = {
  chat: 'POST /v1/chat/completions', messages: 'POST /v1/messages', count_tokens: 'POST /v1/messages/count_tokens', models: 'GET /v1/models',
};

function statusBadge(r: HistoryRow): Html {
  const cls = r.status === 'ok' ? 'badge-success' : r.status === 'error' ? 'badge-error' : 'badge-muted';
  const label = STATUSES.find(([s]) => s === r.status)![1];
  return html`<span class="badge ${cls}">${label}${r.httpStatus !== null && r.status !== 'client_gone' ? ` ${r.httpStatus}` : ''}</span>`;
}

const dayStart = (text: string | null): number | undefined => (text && DAY.test(text) ? Date.parse(`${text}T00:00:00Z`) : undefined);

async function keyNames(ctx: AccountContext): Promise<Map<number, string>> {
  return new Map((await ctx.deps.store.keys.list(ctx.account.id)).map((k) => [k.id, k.name]));
}

async function requestsPage(ctx: AccountContext): Promise<void> {
  const p = ctx.url.searchParams;
  const q = (p.get('q') ?? '').trim();
  const model = p.get('model') || undefined;
  const status = STATUSES.some(([s]) => s === p.get('status')) ? (p.get('status') as HistoryStatus) : undefined;
  const fromText = p.get('from') ?? '', toText = p.get('to') ?? '';
  const query: HistoryQuery = { limit: PAGE_SIZE + 1, model, status, from: dayStart(fromText) };
  const toDay = dayStart(toText);
  if (toDay !== undefined) query.to = toDay + DAY_MS; // the "to" day is included
  const after = /^(\d+)_(req_[0-9A-Z]+)$/.exec(p.get('after') ?? '');
  if (after) query.after = { time: Number(after[1]), requestId: after[2] };

  let rows: HistoryRow[];
  let searched: Html | false = false;
  if (q) {
    const row = REQUEST_ID.test(q) ? await ctx.deps.store.history.get(q) : null;
    rows = row && row.accountId === ctx.account.id ? [row] : [];
    searched = rows.length === 0 && html`<p class="muted" data-testid="no-match">No request with the id <code>${q}</code> in this account.</p>`;
  } else rows = await ctx.deps.store.history.list(ctx.account.id, query);
  const more = rows.length > PAGE_SIZE;
  rows = rows.slice(0, PAGE_SIZE);
  const names = await keyNames(ctx);
  const last = rows.at(-1);
  const older = new URLSearchParams(p);
  if (last) older.set('after', `${last.time}_${last.requestId}`);
  const filtered = Boolean(q || model || status || fromText || toText || after);
  const selected = (on: boolean) => (on ? html` selected` : '');

  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'requests',
    title: 'Requests',
    lead: html`Every API request of this account, newest first. Each response carries its id in the <code>x-request-id</code> header.`,
    body: html`
    <form method="get" action="/dashboard/requests" class="card filters" role="search">
      <label class="grow">Request id <input name="q" value="${q}" placeholder="req_…" spellcheck="false"></label>
      <label>Model <select name="model"><option value="">Any model</option>${ctx.config.models.map((m) => html`<option value="${m.id}"${selected(m.id === model)}>${m.id}</option>`)}</select></label>
      <label>Status <select name="status"><option value="">Any status</option>${STATUSES.map(([s, label]) => html`<option value="${s}"${selected(s === status)}>${label}</option>`)}</select></label>
      <label>From <input type="date" name="from" value="${dayStart(fromText) === undefined ? '' : fromText}"></label>
      <label>To <input type="date" name="to" value="${toDay === undefined ? '' : toText}"></label>
      <div class="filter-actions"><button type="submit" class="button primary">Apply</button>${filtered && html`<a class="button" href="/dashboard/requests">Reset</a>`}</div>
    </form>
    <section class="card flush">
      ${searched || (rows.length === 0 ? html`<p class="muted pad">${filtered ? 'No requests match these filters.' : 'No requests yet.'}</p>` : html`
      <div class="table-wrap"><table class="requests stacked">
        <thead><tr><th>Time (UTC)</th><th>Request id · key</th><th>Model · offer</th><th>Status</th><th class="num">Tokens in / out</th><th class="num">Cost</th><th class="num">Latency</th></tr></thead>
        <tbody>${rows.map((r) => html`<tr data-request-id="${r.requestId}">
          <td data-label="Time (UTC)" class="nowrap">${timeOfDay(r.time)}<div class="sub">${isoDay(r.time)}</div></td>
          <td data-label="Request · key" class="nowrap">${r.notRecorded ? html`<span class="mono">${r.requestId}</span>` : html`<a href="/dashboard/requests/${r.requestId}" class="mono">${r.requestId}</a>`}<div class="sub wrap-value">${names.get(r.keyId) ?? `key #${r.keyId}`}</div></td>
          <td data-label="Model · offer"><div class="wrap-value">${r.model ?? html`<span class="muted">—</span>`}</div>${r.listing && html`<div class="sub wrap-value">${r.listing}</div>`}</td>
          <td data-label="Status">${statusBadge(r)}${r.notRecorded && html`<div class="sub" data-testid="not-recorded">${r.error}</div>`}</td>
          <td data-label="Tokens in/out" class="num nowrap">${count(r.usage.input + r.usage.cacheRead + r.usage.cacheWrite)} / ${count(r.usage.output)}</td>
          <td data-label="Cost" class="num">${usd(r.costNano)}</td>
          <td data-label="Latency" class="num nowrap">${milliseconds(r.latencyMs)}</td>
        </tr>`)}</tbody>
      </table></div>`)}
    </section>
    ${more && html`<nav class="pager"><a class="button" href="/dashboard/requests?${older.toString()}">Older requests →</a></nav>`}`,
  }));
}

async function requestDetail(ctx: AccountContext): Promise<void> {
  const row = await ctx.deps.store.history.get(ctx.params[0]);
  // Another account's request is "not found" too: ids are not secret, their details are.
  if (!row || row.accountId !== ctx.account.id) return notFoundPage(ctx, 'No such request in this account.');
  const names = await keyNames(ctx);
  const u = row.usage;
  sendHtml(ctx.res, 200, appPage(ctx, {
    section: 'requests',
    title: 'Request',
    lead: html`<span class="mono" data-testid="request-id">${row.requestId}</span>`,
    actions: html`<a class="button" href="/dashboard/requests">← All requests</a>`,
    body: html`
    <div class="detail-grid">
      <section class="card">
        <h2>Summary</h2>
        <dl class="pairs">
          <dt>Status</dt><dd>${statusBadge(row)}</dd>
          <dt>Time</dt><dd>${dateTime(row.time)}</dd>
          <dt>Endpoint</dt><dd><code>${ROUTE_LABEL[row.route]}</code>${row.stream ? ' (stream)' : ''}</dd>
          <dt>Model</dt><dd>${row.model ?? '—'}${row.requestedModel && html`<span class="muted"> · asked as <code>${row.requestedModel}</code></span>`}</dd>
          <dt>Served by</dt><dd>${row.listing ?? '—'}</dd>
          <dt>Key</dt><dd>${names.get(row.keyId) ?? `#${row.keyId}`}</dd>
          <dt>Latency</dt><dd>${milliseconds(row.latencyMs)}<span class="muted"> · first byte after ${milliseconds(row.ttfbMs)}</span></dd>
          ${row.error && html`<dt>Error</dt><dd class="error-text">${row.error}</dd>`}
        </dl>
      </section>
      <section class="card">
        <h2>Tokens and cost</h2>
        <dl class="pairs">
          <dt>Input</dt><dd class="num">${count(u.input)}</dd>
          <dt>Output</dt><dd class="num">${count(u.output)}</dd>
          <dt>Cache read</dt><dd class="num">${count(u.cacheRead)}</dd>
          <dt>Cache write</dt><dd class="num">${count(u.cacheWrite)}${u.cacheWrite1h > 0 ? html` <span class="sub">(1 hour: ${count(u.cacheWrite1h)})</span>` : ''}</dd>
          <dt>Hold</dt><dd class="num">${usd(row.holdNano)}</dd>
          <dt>Cost</dt><dd class="num"><strong data-testid="cost">${usd(row.costNano)}</strong></dd>
        </dl>
      </section>
    </div>
    <section class="card flush">
      <h2 class="pad">Attempts</h2>
      ${row.attempts.length === 0 ? html`<p class="muted pad">No upstream was tried (the gateway answered itself or refused the request).</p>` : html`
      <div class="table-wrap"><table>
        <thead><tr><th>#</th><th>Offer</th><th>Outcome</th><th>Upstream status</th><th>Reason</th><th class="num">Duration</th></tr></thead>
        <tbody>${row.attempts.map((a, i) => html`<tr>
          <td>${i + 1}</td><td>${a.listing}</td>
          <td><span class="badge ${OUTCOME[a.outcome][0]}">${OUTCOME[a.outcome][1]}</span></td>
          <td>${a.status ?? '—'}</td><td>${a.reason ?? '—'}</td><td class="num">${milliseconds(a.durationMs)}</td>
        </tr>`)}</tbody>
      </table></div>`}
    </section>`,
  }));
}

export const requestRoutes: Route[] = [
  page('/dashboard/requests', requestsPage),
  page('/dashboard/requests/(req_[0-9A-Z]+)', requestDetail),
];
